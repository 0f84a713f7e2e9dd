package ledger_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

func TestAppendGetScan(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	run := event.NewID()
	goal := kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "g"}))
	batch := kit.Message(2, kit.Node, started(run, 3)...)
	one := kit.Message(3, kit.Node, started(run, 1)...)

	recs := mustAppend(t, st, goal, batch, one)
	if len(recs) != 5 {
		t.Fatalf("got %d records, want 5", len(recs))
	}
	wantStream := []uint64{1, 2, 2, 2, 3}
	for i, ev := range recs {
		if ev.Seq != uint64(i+1) || ev.StreamSeq != wantStream[i] {
			t.Errorf("record %d: seq %d stream %d, want %d %d", i, ev.Seq, ev.StreamSeq, i+1, wantStream[i])
		}
	}
	if recs[0].ID != goal.Events[0].ID || recs[0].Node != "op" || recs[1].ID != batch.Events[0].ID {
		t.Errorf("records do not carry the message events: %+v", recs[:2])
	}
	seq, hash := st.Head()
	if seq != 5 || hash != chainOf(t, recs) {
		t.Errorf("Head = %d %x, want 5 %x", seq, hash, chainOf(t, recs))
	}
	if got := st.AppliedStreamSeq(); got != 3 {
		t.Errorf("AppliedStreamSeq = %d, want 3", got)
	}

	for i, ev := range recs {
		rec, err := st.Get(ev.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Event.ID != ev.ID || rec.Event.Seq != ev.Seq || rec.Hash != chainOf(t, recs[:i+1]) {
			t.Errorf("Get(%d) = %+v", ev.Seq, rec)
		}
		want := []ledger.Message{goal, batch, batch, batch, one}[i]
		if !bytes.Equal(rec.Raw, want.Raw) || rec.MessageID != want.EnvelopeID || !rec.MessageTime.Equal(want.Time) {
			t.Errorf("Get(%d): raw/message id/time do not match the message", ev.Seq)
		}
	}
	if _, err := st.Get(6); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(6) error = %v, want ErrNotFound", err)
	}
	if _, err := st.Get(0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(0) error = %v, want ErrNotFound", err)
	}

	if got := seqs(collect(t, st.Scan(1))); !equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Errorf("Scan(1) = %v", got)
	}
	if got := seqs(collect(t, st.Scan(4))); !equal(got, []uint64{4, 5}) {
		t.Errorf("Scan(4) = %v", got)
	}
	if got := collect(t, st.Scan(6)); len(got) != 0 {
		t.Errorf("Scan(6) = %v", seqs(got))
	}
	n := 0
	for range st.Scan(1) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("breaking out of Scan: %d iterations", n)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAppendIdempotentByStreamSeq(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	var msgs []ledger.Message
	for i := range 5 {
		msgs = append(msgs, kit.Message(uint64(i+1), kit.Node, started("r", 2)...))
	}
	mustAppend(t, st, msgs[:3]...)
	seq, hash := st.Head()

	if recs := mustAppend(t, st, msgs[:3]...); recs != nil {
		t.Errorf("re-append returned %d records, want none", len(recs))
	}
	if s2, h2 := st.Head(); s2 != seq || h2 != hash {
		t.Errorf("head moved on redelivery: %d -> %d", seq, s2)
	}
	recs := mustAppend(t, st, msgs[1:]...) // 2,3 again, then 4,5
	if len(recs) != 4 || recs[0].StreamSeq != 4 || recs[0].Seq != 7 {
		t.Fatalf("overlapping append: %d records, first %+v", len(recs), recs)
	}
	if got := st.AppliedStreamSeq(); got != 5 {
		t.Errorf("AppliedStreamSeq = %d, want 5", got)
	}
	if _, err := st.Append(nil); err != nil {
		t.Errorf("Append(nil) = %v", err)
	}
	if _, err := st.Append([]ledger.Message{{StreamSeq: 0}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("stream seq 0: error %v, want ErrInvalid", err)
	}
}

func TestReplayedEnvelopeIsRejectedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	orig := kit.Message(1, kit.Node, started("r", 3)...)

	st := ledgertest.OpenDir(t, dir)
	mustAppend(t, st, orig)
	recs := mustAppend(t, st, ledgertest.Redeliver(orig, 2))
	checkReplay := func(recs []event.Event, stream uint64) {
		t.Helper()
		if len(recs) != 1 {
			t.Fatalf("replay gave %d records, want 1 rejection", len(recs))
		}
		d := rejectedData(t, recs[0])
		if d.Reason != "replayed message id "+orig.EnvelopeID || d.Signer != "n1" || d.ClaimedID != orig.EnvelopeID || d.Subject != orig.Subject {
			t.Errorf("rejection = %+v", d)
		}
		ev := recs[0]
		if ev.Node != "" || ev.Run != "" || ev.StreamSeq != stream || ev.Subject != orig.Subject || ev.ID != "rej-"+itoa(stream)+"-0" {
			t.Errorf("rejection record = %+v", ev)
		}
	}
	checkReplay(recs, 2)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = ledgertest.OpenDir(t, dir)
	checkReplay(mustAppend(t, st, ledgertest.Redeliver(orig, 3)), 3)
	// The record keeps the raw message for the audit.
	rec, err := st.Get(5)
	if err != nil || !bytes.Equal(rec.Raw, orig.Raw) {
		t.Errorf("Get(5) = %v, %v; want the replayed raw message", rec, err)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestDuplicateEventIDInNewMessage(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	ds := started("r", 2)
	first := kit.Message(1, kit.Node, ds[0])
	// A new batch (new jti) that repeats ds[0] next to a fresh event.
	again := kit.Message(2, kit.Node, ds[0], ds[1])
	recs := mustAppend(t, st, first, again)
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	d := rejectedData(t, recs[1])
	if d.Reason != "duplicate event id "+ds[0].ID || d.ClaimedID != ds[0].ID || d.ClaimedType != string(event.TaskStarted) {
		t.Errorf("rejection = %+v", d)
	}
	if recs[1].ID != "rej-2-0" || recs[1].StreamSeq != 2 {
		t.Errorf("rejection record = %+v", recs[1])
	}
	if recs[2].ID != ds[1].ID || recs[2].Type != event.TaskStarted {
		t.Errorf("sibling not appended: %+v", recs[2])
	}
	// Its envelope id joined the seen-set: redelivering it is a replay.
	recs = mustAppend(t, st, ledgertest.Redeliver(again, 3))
	if d := rejectedData(t, recs[0]); !strings.HasPrefix(d.Reason, "replayed message id ") {
		t.Errorf("redelivered batch: %+v", d)
	}
}

func TestDuplicateWithinOneAppendCall(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	m := kit.Message(1, kit.Node, started("r", 1)...)
	recs := mustAppend(t, st, m, ledgertest.Redeliver(m, 2))
	if len(recs) != 2 || recs[0].Type != event.TaskStarted || recs[1].Type != event.Rejected {
		t.Fatalf("records = %+v", recs)
	}
}

func TestGapRecord(t *testing.T) {
	var buf syncBuffer
	st, err := ledger.Open(t.TempDir(), ledger.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kit := ledgertest.NewKit(t)
	m3 := kit.Message(3, kit.Node, started("r", 1)...)
	recs := mustAppend(t, st, m3)
	if len(recs) != 2 {
		t.Fatalf("got %d records, want gap + event", len(recs))
	}
	checkGap := func(ev event.Event, from, to uint64, m ledger.Message) {
		t.Helper()
		var g event.GapData
		if ev.Type != event.Gap || ev.Decode(&g) != nil || g.From != from || g.To != to {
			t.Fatalf("gap record = %+v", ev)
		}
		if ev.StreamSeq != m.StreamSeq || ev.Node != "" || ev.Run != "" || ev.ID != "gap-"+itoa(from) || !ev.Time.Equal(m.Time) || ev.Subject != m.Subject {
			t.Errorf("gap record = %+v", ev)
		}
	}
	checkGap(recs[0], 1, 2, m3)
	if recs[1].StreamSeq != 3 {
		t.Errorf("event after gap: %+v", recs[1])
	}
	if !strings.Contains(buf.String(), "level=ERROR msg=\"stream gap\" component=ledger from=1 to=2") {
		t.Errorf("gap not logged at Error:\n%s", buf.String())
	}
	m7 := kit.Message(7, kit.Node, started("r", 1)...)
	recs = mustAppend(t, st, kit.Message(4, kit.Node, started("r", 1)...), m7)
	if len(recs) != 3 {
		t.Fatalf("got %d records", len(recs))
	}
	checkGap(recs[1], 5, 6, m7)
	rec, err := st.Get(recs[1].Seq)
	if err != nil || rec.Raw != nil {
		t.Errorf("gap record has raw message %q (%v)", rec.Raw, err)
	}
	if got := collect(t, st.ScanType(event.Gap, 1)); len(got) != 2 {
		t.Errorf("ScanType(Gap) found %d", len(got))
	}
}

func TestRejectedMessage(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	// An executor credential may not emit goal.submitted: verification fails.
	exec := kit.Identity("x1", trust.KindNode, event.RoleExecutor)
	d := event.MustDraft(event.GoalSubmitted, "r", event.GoalSubmittedData{Goal: "g"})
	raw, subj := kit.Sign(exec, d)
	forged := kit.Receive(1, subj, raw, time.Now())
	if forged.Reject == nil {
		t.Fatal("kit verified a forbidden message")
	}
	recs := mustAppend(t, st, forged)
	if len(recs) != 1 {
		t.Fatalf("got %d records", len(recs))
	}
	got := rejectedData(t, recs[0])
	if got != *forged.Reject || got.Signer != "x1" || got.ClaimedID != d.ID {
		t.Errorf("rejection = %+v, want %+v", got, *forged.Reject)
	}
	if recs[0].Run != "" || recs[0].ID != "rej-1-0" {
		t.Errorf("record = %+v", recs[0])
	}
	// A refused message does not claim its id: the genuine event with the
	// same id is still accepted.
	recs = mustAppend(t, st, kit.Message(2, kit.Operator, d))
	if len(recs) != 1 || recs[0].Type != event.GoalSubmitted || recs[0].ID != d.ID {
		t.Errorf("genuine event after forgery: %+v", recs)
	}
	// A message with neither events nor a rejection is recorded as refused.
	recs = mustAppend(t, st, ledger.Message{StreamSeq: 3, Subject: "agentic.ev.x.y"})
	if len(recs) != 1 || rejectedData(t, recs[0]).Reason != "message carries no events" {
		t.Errorf("empty message: %+v", recs)
	}
}

func TestReopenKeepsHeadAndSeenSet(t *testing.T) {
	dir := t.TempDir()
	kit := ledgertest.NewKit(t)
	ds := started("r", 2)
	st := ledgertest.OpenDir(t, dir)
	mustAppend(t, st, kit.Message(1, kit.Node, ds[0]), kit.Message(2, kit.Node, started("r", 3)...))
	seq, hash := st.Head()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	if s2, h2 := st.Head(); s2 != seq || h2 != hash || st.AppliedStreamSeq() != 2 {
		t.Fatalf("after reopen head %d %x applied %d, want %d %x 2", s2, h2, st.AppliedStreamSeq(), seq, hash)
	}
	recs := mustAppend(t, st, kit.Message(3, kit.Node, ds[0], ds[1]))
	if len(recs) != 2 || recs[0].Type != event.Rejected || recs[1].ID != ds[1].ID || recs[0].Seq != seq+1 {
		t.Errorf("after reopen: %+v", recs)
	}
	rep, err := st.Verify(kit.Verifier)
	if err != nil || !rep.OK {
		t.Errorf("Verify after reopen: %+v %v", rep, err)
	}
}

func TestClosed(t *testing.T) {
	st, err := ledger.Open(t.TempDir(), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := st.Append([]ledger.Message{{StreamSeq: 1}}); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	if _, err := st.Get(1); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Get after Close = %v", err)
	}
	for _, err := range st.Scan(1) {
		if !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("Scan after Close = %v", err)
		}
	}
	if _, err := st.Verify(nil); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Verify after Close = %v", err)
	}
}

func TestFormatOnlyMovesForward(t *testing.T) {
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	v, err := ledger.RawGet(st, []byte(ledger.FormatKey))
	if err != nil || len(v) != 8 || v[7] != ledger.FormatVersion {
		t.Fatalf("meta/format = %x, %v; want version %d", v, err, ledger.FormatVersion)
	}
	if err := ledger.RawSet(st, []byte(ledger.FormatKey), []byte{0, 0, 0, 0, 0, 0, 0, ledger.FormatVersion + 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Open(dir, ledger.Options{Logger: ledgertest.Logger(t)}); !errors.Is(err, ledger.ErrFormat) {
		t.Errorf("Open of a newer format = %v, want ErrFormat", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
