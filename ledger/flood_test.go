package ledger_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// floodStream makes n stream messages from seq 1: forgeries (garbage with no
// signer, and messages signed under another root by a few claimed signers)
// at a stream time step apart from t0, with a valid message every
// validEvery (0: none). It returns the messages and how many are refused.
// windowStart is a stream time one second into the next rejection
// window: a flood of a few seconds from it stays in one window, and
// t0 + RejectWindow is in the window after, whatever the clock says when
// the test runs. It lies at most a minute ahead, well inside the
// messages' validity (iat before stream time; exp five minutes after).
func windowStart() time.Time {
	return time.Now().Truncate(ledger.RejectWindow).Add(ledger.RejectWindow + time.Second)
}

func floodStream(t *testing.T, k *ledgertest.Kit, t0 time.Time, step time.Duration, n, validEvery int) ([]ledger.Message, int) {
	t.Helper()
	other := ledgertest.NewKit(t)
	forgers := []*trust.Identity{
		other.Identity("n1", trust.KindNode, event.NodeRoles...), // claims a real node's name
		other.Identity("intruder", trust.KindNode, event.NodeRoles...),
	}
	var forged [][]byte
	var subjects []string
	for _, f := range forgers {
		raw, subj := other.Sign(f, started("run-forged", 1)...)
		forged, subjects = append(forged, raw), append(subjects, subj)
	}
	msgs := make([]ledger.Message, 0, n)
	refused := 0
	for i := range n {
		seq, at := uint64(i+1), t0.Add(time.Duration(i)*step)
		switch {
		case validEvery > 0 && i%validEvery == validEvery-1:
			raw, subj := k.Sign(k.Node, started(fmt.Sprintf("run-%d", i), 1)...)
			m := k.Receive(seq, subj, raw, at)
			if m.Reject != nil {
				t.Fatalf("valid message %d refused: %s", i, m.Reject.Reason)
			}
			msgs = append(msgs, m)
			continue
		case i%3 == 0:
			msgs = append(msgs, k.Receive(seq, "agentic.ev.task.started", fmt.Appendf(nil, "garbage %d", i), at))
		case i%3 == 1:
			// A new claimed kid per message: its own key, until the
			// window tracks no more.
			msgs = append(msgs, k.Receive(seq, subjects[0], forged[0], at))
			msgs[len(msgs)-1].Reject.Signer = fmt.Sprintf("kid-%d", i)
		default:
			msgs = append(msgs, k.Receive(seq, subjects[1], forged[1], at))
		}
		if msgs[len(msgs)-1].Reject == nil {
			t.Fatalf("forgery %d accepted", i)
		}
		refused++
	}
	return msgs, refused
}

// tally reads a ledger's rejection records: those recorded one by one, the
// counts of the summaries, and the summaries.
func tally(t *testing.T, st *ledger.Store) (full, counted, summaries int) {
	t.Helper()
	for _, rec := range collect(t, st.Scan(1)) {
		switch rec.Event.Type {
		case event.Rejected:
			full++
		case event.RejectedSummary:
			var d event.RejectedSummaryData
			if err := rec.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			var byCode, bySigner uint64
			for _, n := range d.ByCode {
				byCode += n
			}
			for _, n := range d.BySigner {
				bySigner += n
			}
			if d.Count != d.To-d.From+1 || byCode != d.Count || bySigner != d.Count {
				t.Errorf("summary %d: %+v does not add up", rec.Event.Seq, d)
			}
			if len(d.BySigner) > ledger.RejectSignersPerWindow+2 {
				t.Errorf("summary %d counts %d signers apart", rec.Event.Seq, len(d.BySigner))
			}
			counted += int(d.Count)
			summaries++
		}
	}
	return full, counted, summaries
}

// TestRejectFloodIsCountedNotKept: 10,000 forgeries over about two minutes
// of stream time grow the ledger by a bounded number of records, every one
// is accounted for (recorded, or counted in a summary), the chain
// verifies, and two ledgers folding the same stream — one message at a
// time, and in batches with a restart in the middle of a run — end with
// the same head.
func TestRejectFloodIsCountedNotKept(t *testing.T) {
	k := ledgertest.NewKit(t)
	t0 := windowStart()
	const n, validEvery = 10_000, 2_500
	msgs, refused := floodStream(t, k, t0, 12*time.Millisecond, n, validEvery)

	one := ledgertest.Open(t)
	for _, m := range msgs {
		mustAppend(t, one, m)
	}

	dir := t.TempDir()
	batched := ledgertest.OpenDir(t, dir)
	for i := 0; i < len(msgs); i += 777 {
		if i == 777*6 {
			// Restart in the middle of a flood: the limiter's state
			// was committed with the head.
			if err := batched.Close(); err != nil {
				t.Fatal(err)
			}
			batched = ledgertest.OpenDir(t, dir)
		}
		mustAppend(t, batched, msgs[i:min(i+777, len(msgs))]...)
	}

	s1, h1 := one.Head()
	s2, h2 := batched.Head()
	if s1 != s2 || h1 != h2 {
		t.Fatalf("heads differ: one by one %d %x, batched with a restart %d %x", s1, h1, s2, h2)
	}
	full, counted, summaries := tally(t, one)
	if full+counted != refused {
		t.Fatalf("%d recorded + %d counted in summaries, want the %d refused", full, counted, refused)
	}
	if counted == 0 {
		t.Fatal("nothing counted: the flood was recorded one by one")
	}
	// Stream time spans this many windows at most; each records at most
	// its full ones and samples, each of them and each valid message may
	// end a run (its summary first), and a window's end may end one more.
	windows := int(time.Duration(n)*12*time.Millisecond/ledger.RejectWindow) + 2
	valid := n / validEvery
	bound := windows*(2*(ledger.RejectFullPerWindow+ledger.RejectSampledPerWindow)+1) + 2*valid
	t.Logf("%d forgeries: %d records (%d in full, %d summaries counting %d), bound %d", refused, s1, full, summaries, counted, bound)
	if int(s1) > bound {
		t.Fatalf("%d records for %d forgeries, want at most %d", s1, refused, bound)
	}
	st := one.RejectStats()
	var total uint64
	for _, c := range st.ByCode {
		total += c
	}
	if total != uint64(refused) || st.Dropped != uint64(counted) {
		t.Fatalf("RejectStats %+v: want %d refused, %d dropped", st, refused, counted)
	}
	for _, s := range []*ledger.Store{one, batched} {
		rep, err := s.Verify(k.Verifier)
		if err != nil || !rep.OK {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	}

	// An export carries the summaries; its import verifies with the same
	// head.
	var exp bytes.Buffer
	if err := one.Export(&exp); err != nil {
		t.Fatal(err)
	}
	imported, err := ledger.Import(t.TempDir(), &exp, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer imported.Close()
	if s, h := imported.Head(); s != s1 || h != h1 {
		t.Fatalf("imported head %d %x, want %d %x", s, h, s1, h1)
	}
	if rep, err := imported.Verify(k.Verifier); err != nil || !rep.OK {
		t.Fatalf("verify the import: %+v %v", rep, err)
	}
}

// TestRejectSummaryThatHidesMessagesFailsVerify: a rechained ledger whose
// summary no longer counts every stream seq before it fails verification
// at that summary.
func TestRejectSummaryThatHidesMessagesFailsVerify(t *testing.T) {
	k := ledgertest.NewKit(t)
	msgs, _ := floodStream(t, k, windowStart(), time.Millisecond, 200, 0)
	st := ledgertest.Open(t)
	mustAppend(t, st, msgs...)
	mustAppend(t, st, k.Message(201, k.Node, started("run-after", 1)...))
	var sum event.Event
	for _, rec := range collect(t, st.Scan(1)) {
		var d event.RejectedSummaryData
		if rec.Event.Type == event.RejectedSummary && rec.Event.Decode(&d) == nil && d.Count >= 2 {
			sum = rec.Event
			break
		}
	}
	if sum.Seq == 0 {
		t.Fatal("no summary of two messages or more in the ledger")
	}
	var exp bytes.Buffer
	if err := st.Export(&exp); err != nil {
		t.Fatal(err)
	}
	forged := ledgertest.Rechain(t, exp.Bytes(), func(ev *event.Event) bool {
		if ev.Seq != sum.Seq {
			return true
		}
		var d event.RejectedSummaryData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		d.From++ // hides a counted message
		d.Count--
		for code := range d.ByCode {
			d.ByCode[code]--
			break
		}
		for signer := range d.BySigner {
			d.BySigner[signer]--
			break
		}
		ev.Data, _ = json.Marshal(d)
		return true
	})
	imported, err := ledger.Import(t.TempDir(), bytes.NewReader(forged), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer imported.Close()
	rep, err := imported.Verify(k.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.FirstBadSeq != sum.Seq {
		t.Fatalf("verify of a summary that hides a message: %+v, want it refused at %d", rep, sum.Seq)
	}
	t.Logf("refused: %s", rep.Err)
}

// TestRejectRunOpenAtHead: a ledger whose last messages are counted in a
// run not yet summarized verifies, restarts, and writes the summary when
// the next message comes, as a ledger that never stopped does.
func TestRejectRunOpenAtHead(t *testing.T) {
	k := ledgertest.NewKit(t)
	t0 := windowStart()
	msgs, refused := floodStream(t, k, t0, time.Millisecond, 1_000, 0)
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	mustAppend(t, st, msgs...)
	seq, _ := st.Head()
	if st.AppliedStreamSeq() != 1_000 || seq >= 1_000 {
		t.Fatalf("head %d, applied %d: want every message applied and fewer records", seq, st.AppliedStreamSeq())
	}
	if rep, err := st.Verify(k.Verifier); err != nil || !rep.OK {
		t.Fatalf("verify with an open run: %+v %v", rep, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	next := k.Message(1_001, k.Node, started("run-after", 1)...)
	next.Time = t0.Add(2 * time.Second)
	recs := mustAppend(t, st, next)
	if len(recs) != 2 || recs[0].Type != event.RejectedSummary || recs[1].Type != event.TaskStarted {
		t.Fatalf("after a restart the next message gave %v, want the run's summary then the event", recs)
	}
	full, counted, _ := tally(t, st)
	if full+counted != refused {
		t.Fatalf("%d recorded + %d counted, want %d", full, counted, refused)
	}
	if rep, err := st.Verify(k.Verifier); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestRejectRecordsAgainNextWindow: once stream time reaches the next
// window, rejections are recorded in full again, and the run of the
// previous window is summarized first.
func TestRejectRecordsAgainNextWindow(t *testing.T) {
	k := ledgertest.NewKit(t)
	t0 := windowStart()
	msgs, _ := floodStream(t, k, t0, time.Millisecond, 1_000, 0)
	st := ledgertest.Open(t)
	mustAppend(t, st, msgs...)
	late := k.Receive(1_001, "agentic.ev.task.started", []byte("garbage late"), t0.Add(ledger.RejectWindow))
	recs := mustAppend(t, st, late)
	if len(recs) != 2 || recs[0].Type != event.RejectedSummary || recs[1].Type != event.Rejected {
		t.Fatalf("a rejection in the next window gave %v, want the summary then its own record", recs)
	}
}

// TestRejectedMessageBounded: a refused message keeps only its first
// RejectRawMax bytes in the ledger.
func TestRejectedMessageBounded(t *testing.T) {
	k := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	big := bytes.Repeat([]byte("x"), 64<<10)
	m := k.Receive(1, "agentic.ev.task.started", big, time.Now())
	if m.Reject == nil {
		t.Fatal("garbage accepted")
	}
	mustAppend(t, st, m)
	raw, err := st.Message(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != ledger.RejectRawMax || !bytes.Equal(raw, big[:ledger.RejectRawMax]) {
		t.Fatalf("kept %d bytes of a %d-byte refused message, want its first %d", len(raw), len(big), ledger.RejectRawMax)
	}
}

// TestRejectedClaimsBounded: what a forger chooses — the claimed signer,
// type and id — is cut to RejectClaimMax bytes in the record.
func TestRejectedClaimsBounded(t *testing.T) {
	k := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	long := strings.Repeat("é", 5_000)
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	raw := seg(map[string]string{"alg": "EdDSA", "typ": "JWT", "kid": long, "cred": "x"}) + "." +
		seg(map[string]any{"iss": long, "jti": long, "typ": long, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix()}) + "." + seg("sig")
	m := k.Receive(1, "agentic.ev.task.started", []byte(raw), time.Now())
	if m.Reject == nil || m.Reject.Signer != long {
		t.Fatalf("the forgery's claimed signer was not read: %+v", m.Reject)
	}
	recs := mustAppend(t, st, m)
	d := rejectedData(t, recs[0])
	for name, v := range map[string]string{"signer": d.Signer, "claimed_type": d.ClaimedType, "claimed_id": d.ClaimedID} {
		if len(v) > ledger.RejectClaimMax || !strings.HasSuffix(v, "…") || !utf8.ValidString(v) {
			t.Errorf("%s kept %d bytes (%q…), want at most %d, cut at a character", name, len(v), v[:min(len(v), 20)], ledger.RejectClaimMax)
		}
	}
	if len(d.Reason) > ledger.RejectReasonMax {
		t.Errorf("reason kept %d bytes, want at most %d", len(d.Reason), ledger.RejectReasonMax)
	}
}
