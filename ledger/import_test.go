package ledger_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// richLedger holds every kind of record: gap, batch, refused message,
// replayed message, duplicate event, payload with characters JSON escapes.
func richLedger(t *testing.T, st *ledger.Store, kit *ledgertest.Kit) []ledger.Message {
	ds := started("r1", 2)
	batch := kit.Message(2, kit.Node, started("r1", 3)...)
	odd := event.MustDraft(event.GoalSubmitted, "r2", event.GoalSubmittedData{Goal: "<b>&\u2028 \"x\" é"})
	msgs := []ledger.Message{
		kit.Message(2, kit.Node, ds[0]), // gap 1..1 first
		kit.Message(3, kit.Operator, odd),
		kit.Receive(4, "agentic.ev.goal.submitted", []byte("forged"), time.Now()),
		kit.Message(5, kit.Node, ds[0], ds[1]), // duplicate ds[0]
		batch,
		ledgertest.Redeliver(batch, 7), // replay
		kit.Message(8, kit.Node, started("r2", 2)...),
	}
	msgs[4].StreamSeq = 6
	mustAppend(t, st, msgs...)
	return msgs
}

func TestExportImportRoundTrip(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	msgs := richLedger(t, st, kit)
	var buf bytes.Buffer
	if err := st.Export(&buf); err != nil {
		t.Fatal(err)
	}
	headSeq, headHash := st.Head()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if uint64(len(lines)) != headSeq {
		t.Fatalf("export has %d lines for %d records", len(lines), headSeq)
	}
	// Each line is the event plus hash, and the message once per stream seq.
	jws := 0
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, ok := m["hash"].(string); !ok || m["type"] == nil || m["seq"] == nil {
			t.Errorf("line lacks fields: %s", l)
		}
		if _, ok := m["jws"]; ok {
			jws++
		}
	}
	if jws != len(msgs) {
		t.Errorf("%d lines carry a jws, want one per message (%d)", jws, len(msgs))
	}

	dir := filepath.Join(t.TempDir(), "imported")
	im, err := ledger.Import(dir, bytes.NewReader(buf.Bytes()), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	if s, h := im.Head(); s != headSeq || h != headHash || im.AppliedStreamSeq() != st.AppliedStreamSeq() {
		t.Fatalf("imported head %d %x applied %d, want %d %x %d", s, h, im.AppliedStreamSeq(), headSeq, headHash, st.AppliedStreamSeq())
	}
	a, b := collect(t, st.Scan(1)), collect(t, im.Scan(1))
	for i := range a {
		ja, _ := json.Marshal(a[i].Event)
		jb, _ := json.Marshal(b[i].Event)
		if !bytes.Equal(ja, jb) || a[i].Hash != b[i].Hash || !bytes.Equal(a[i].Raw, b[i].Raw) ||
			!a[i].MessageTime.Equal(b[i].MessageTime) || a[i].MessageID != b[i].MessageID {
			t.Errorf("record %d differs after import:\n%s\n%s", i+1, ja, jb)
		}
	}
	if got := seqs(collect(t, im.ScanRun("r2", 1))); !equal(got, seqs(collect(t, st.ScanRun("r2", 1)))) {
		t.Errorf("imported run index = %v", got)
	}
	if rep, err := im.Verify(kit.Verifier); err != nil || !rep.OK {
		t.Errorf("Verify(imported) = %+v %v", rep, err)
	}

	// The seen-set came along: the same next messages give the same records.
	next := []ledger.Message{
		ledgertest.Redeliver(msgs[0], 9),                          // replayed single event
		ledgertest.Redeliver(msgs[3], 10),                         // replayed message whose events were partly duplicates
		kit.Message(11, kit.Node, started("r3", 1)...),            // fresh
		kit.Receive(12, msgs[2].Subject, msgs[2].Raw, time.Now()), // refused again
	}
	ra, rb := mustAppend(t, st, next...), mustAppend(t, im, next...)
	for i := range ra {
		ja, _ := json.Marshal(ra[i])
		jb, _ := json.Marshal(rb[i])
		if !bytes.Equal(ja, jb) {
			t.Errorf("after import, appends differ:\n%s\n%s", ja, jb)
		}
	}
	if _, h1 := st.Head(); h1 != func() [32]byte { _, h := im.Head(); return h }() {
		t.Error("heads diverge after the same appends")
	}
	if ra[0].Type != event.Rejected || ra[1].Type != event.Rejected || ra[2].Type != event.TaskStarted {
		t.Errorf("appends after import: %v %v %v", ra[0].Type, ra[1].Type, ra[2].Type)
	}
}

func TestImportRefuses(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	richLedger(t, st, kit)
	var buf bytes.Buffer
	if err := st.Export(&buf); err != nil {
		t.Fatal(err)
	}
	opts := ledger.Options{Logger: ledgertest.Logger(t)}

	t.Run("non-empty store", func(t *testing.T) {
		dir := t.TempDir()
		other := ledgertest.OpenDir(t, dir)
		mustAppend(t, other, kit.Message(1, kit.Node, started("x", 1)...))
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Import(dir, bytes.NewReader(buf.Bytes()), opts); !errors.Is(err, ledger.ErrNotEmpty) {
			t.Errorf("Import into non-empty = %v, want ErrNotEmpty", err)
		}
	})

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	edits := map[string]func() string{
		"changed payload": func() string {
			l := slicesClone(lines)
			l[1] = strings.Replace(l[1], `"s0"`, `"s7"`, 1)
			return strings.Join(l, "\n")
		},
		"removed line": func() string {
			l := slicesClone(lines)
			return strings.Join(append(l[:3], l[4:]...), "\n")
		},
		"reordered lines": func() string {
			l := slicesClone(lines)
			l[3], l[4] = l[4], l[3]
			return strings.Join(l, "\n")
		},
		"not json": func() string { return lines[0] + "\n{oops\n" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			text := edit()
			if text == strings.Join(lines, "\n") {
				t.Fatal("edit changed nothing")
			}
			dir := t.TempDir()
			_, err := ledger.Import(dir, strings.NewReader(text), opts)
			if !errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("Import = %v, want ErrCorrupt", err)
			}
			// The half-imported directory is refused until removed.
			if _, err := ledger.Open(dir, opts); !errors.Is(err, ledger.ErrFormat) {
				t.Errorf("Open after failed import = %v, want ErrFormat", err)
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestExportEmpty(t *testing.T) {
	st := ledgertest.Open(t)
	var buf bytes.Buffer
	if err := st.Export(&buf); err != nil || buf.Len() != 0 {
		t.Fatalf("Export(empty) = %q, %v", buf.String(), err)
	}
	im, err := ledger.Import(t.TempDir(), bufio.NewReader(&buf), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if s, _ := im.Head(); s != 0 {
		t.Errorf("imported empty head %d", s)
	}
}

// Messages made by hand (no raw JWS, as other packages' tests may append)
// still export and import with their envelope ids, so the seen-set matches.
func TestImportKeepsEnvelopeIDsWithoutRaw(t *testing.T) {
	st := ledgertest.Open(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	mk := func(seq uint64, jti string, ids ...string) ledger.Message {
		m := ledger.Message{StreamSeq: seq, Subject: "agentic.ev.task.started", Time: at, EnvelopeID: jti}
		for _, id := range ids {
			m.Events = append(m.Events, event.Event{ID: id, Type: event.TaskStarted, Node: "n1", Time: at, Subject: m.Subject})
		}
		return m
	}
	mustAppend(t, st, mk(1, "batch-1", "a", "b"))
	var buf bytes.Buffer
	if err := st.Export(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"msg_id":"batch-1"`) {
		t.Fatalf("export lost the envelope id:\n%s", buf.String())
	}
	im, err := ledger.Import(t.TempDir(), &buf, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	replay := mk(2, "batch-1", "c")
	ra, rb := mustAppend(t, st, replay), mustAppend(t, im, replay)
	if len(ra) != 1 || len(rb) != 1 || ra[0].Type != event.Rejected || rb[0].Type != event.Rejected {
		t.Fatalf("replay after import: original %+v, imported %+v", ra, rb)
	}
	_, h1 := st.Head()
	_, h2 := im.Head()
	if h1 != h2 {
		t.Error("heads differ")
	}
	rec, err := im.Get(1)
	if err != nil || rec.Raw != nil || rec.MessageID != "batch-1" || !rec.MessageTime.Equal(at) {
		t.Errorf("imported Get(1) = %+v, %v", rec, err)
	}
}

// Lines read from any position concatenate to exactly Export's output (a
// page that starts inside a batch does not repeat the message), and a line
// without its "jws", with the message put back at the offset given, is the
// line again byte for byte.
func TestExportLinesFromAnyPosition(t *testing.T) {
	st := ledgertest.Open(t)
	richLedger(t, st, ledgertest.NewKit(t))
	var whole bytes.Buffer
	if err := st.Export(&whole); err != nil {
		t.Fatal(err)
	}
	head, _ := st.Head()
	for _, size := range []int{1, 2, 3, 5, 100} {
		var paged bytes.Buffer
		var from uint64 = 1
		for from <= head {
			n := 0
			for l, err := range st.ExportLines(from) {
				if err != nil {
					t.Fatal(err)
				}
				if l.Seq != from+uint64(n) {
					t.Fatalf("line of record %d, want %d", l.Seq, from+uint64(n))
				}
				paged.Write(append(l.Line, '\n'))
				if n++; n == size {
					break
				}
			}
			from += uint64(n)
		}
		if paged.String() != whole.String() {
			t.Fatalf("pages of %d differ from the whole export (%d records)", size, head)
		}
	}

	split := 0
	for l, err := range st.ExportLines(1) {
		if err != nil {
			t.Fatal(err)
		}
		without, at, err := l.WithoutJWS()
		if err != nil {
			t.Fatal(err)
		}
		if l.JWSSize == 0 {
			if at != -1 || !bytes.Equal(without, l.Line) {
				t.Errorf("record %d without a jws: at %d, line %s", l.Seq, at, without)
			}
			continue
		}
		split++
		raw, err := st.Message(l.StreamSeq)
		if err != nil || len(raw) != l.JWSSize {
			t.Fatalf("Message(%d) = %d bytes, %v; want %d", l.StreamSeq, len(raw), err, l.JWSSize)
		}
		if bytes.Contains(without, []byte(`"jws"`)) || len(without) >= len(l.Line) {
			t.Errorf("record %d: line without jws still has it: %s", l.Seq, without)
		}
		str, _ := json.Marshal(string(raw))
		rebuilt := append(append(append([]byte(nil), without[:at]...), append([]byte(`,"jws":`), str...)...), without[at:]...)
		if !bytes.Equal(rebuilt, l.Line) {
			t.Errorf("record %d rebuilt:\n%s\nwant\n%s", l.Seq, rebuilt, l.Line)
		}
	}
	if split == 0 {
		t.Fatal("no line carried a jws")
	}
	if _, err := st.Message(1); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Message of a gap's stream seq = %v, want ErrNotFound", err)
	}
}
