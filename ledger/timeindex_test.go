package ledger_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// timedLedger appends messages at stream times t0+1s, t0+2s, …: a gap
// (stream seq 1 missing), a batch of 3, a refused message, singles.
func timedLedger(t *testing.T, st *ledger.Store, kit *ledgertest.Kit, t0 time.Time) {
	t.Helper()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	m := []ledger.Message{
		kit.Message(2, kit.Node, started("r1", 1)...), // gap 1..1 first, same time
		kit.Message(3, kit.Node, started("r1", 3)...),
		kit.Receive(4, "agentic.ev.goal.submitted", []byte("forged"), at(3)),
		kit.Message(5, kit.Node, started("r2", 1)...),
		kit.Message(6, kit.Node, started("r2", 1)...),
	}
	for i := range m {
		m[i].Time = at(i + 1)
	}
	mustAppend(t, st, m[:2]...)
	mustAppend(t, st, m[2:]...)
}

func TestSeqAtTime(t *testing.T) {
	st := ledgertest.Open(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if seq, err := st.SeqAtTime(t0); err != nil || seq != 1 {
		t.Fatalf("SeqAtTime on an empty ledger = %d, %v; want 1", seq, err)
	}
	timedLedger(t, st, ledgertest.NewKit(t), t0)
	// Records: 1 gap (t0+1s), 2 (t0+1s), 3-5 batch (t0+2s), 6 rejected
	// (t0+3s), 7 (t0+4s), 8 (t0+5s).
	for _, c := range []struct {
		at   time.Duration
		want uint64
	}{
		{-time.Hour, 1}, {0, 1}, {time.Second, 1}, {time.Second + 1, 3}, {2 * time.Second, 3},
		{2500 * time.Millisecond, 6}, {3 * time.Second, 6}, {4 * time.Second, 7},
		{5 * time.Second, 8}, {5*time.Second + 1, 9}, {time.Hour, 9},
	} {
		if seq, err := st.SeqAtTime(t0.Add(c.at)); err != nil || seq != c.want {
			t.Errorf("SeqAtTime(t0%+v) = %d, %v; want %d", c.at, seq, err, c.want)
		}
	}
	if seq, err := st.SeqAtTime(time.Time{}); err != nil || seq != 1 {
		t.Errorf("SeqAtTime(zero) = %d, %v", seq, err)
	}
	for rec, err := range st.Scan(1) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.StreamTime().IsZero() || rec.StreamTime().Before(t0) {
			t.Errorf("record %d (%s) stream time %v", rec.Event.Seq, rec.Event.Type, rec.StreamTime())
		}
	}
}

// An older ledger gets its time index at Open, the same one Append writes;
// and Import writes it too.
func TestTimeIndexUpgradeAndImport(t *testing.T) {
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	t0 := time.Now().Add(-time.Hour).UTC()
	timedLedger(t, st, ledgertest.NewKit(t), t0)
	want, err := ledger.TimeIndex(st)
	if err != nil || len(want) != 8 {
		t.Fatalf("time index after Append = %d keys, %v; want 8", len(want), err)
	}
	var export bytes.Buffer
	if err := st.Export(&export); err != nil {
		t.Fatal(err)
	}
	if err := ledger.DropTimeIndex(st); err != nil {
		t.Fatal(err)
	}
	if got, _ := ledger.TimeIndex(st); len(got) != 0 {
		t.Fatalf("dropped index still has %d keys", len(got))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	up, err := ledger.Open(dir, ledger.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	got, err := ledger.TimeIndex(up)
	if err != nil || !equalKeys(got, want) {
		t.Fatalf("upgraded index = %x, %v\nwant %x", got, err, want)
	}
	if v, _ := ledger.RawGet(up, []byte(ledger.FormatKey)); len(v) != 8 || v[7] != ledger.FormatVersion {
		t.Errorf("format after upgrade = %x", v)
	}
	if !strings.Contains(logs.String(), "ledger format upgraded") || !strings.Contains(logs.String(), "records=8") {
		t.Errorf("upgrade not logged:\n%s", logs.String())
	}
	if seq, err := up.SeqAtTime(t0.Add(3 * time.Second)); err != nil || seq != 6 {
		t.Errorf("SeqAtTime after upgrade = %d, %v", seq, err)
	}

	im, err := ledger.Import(t.TempDir(), &export, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if got, err := ledger.TimeIndex(im); err != nil || !equalKeys(got, want) {
		t.Fatalf("imported index = %x, %v\nwant %x", got, err, want)
	}
}

func equalKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Messages with no stored bytes are indexed by their events' own time, by
// Append and by a rebuild alike.
func TestTimeIndexWithoutStoredMessage(t *testing.T) {
	st := ledgertest.Open(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := event.Event{ID: "e1", Type: event.TaskStarted, Node: "n1", Time: at.Add(-time.Minute), Subject: "agentic.ev.task.started"}
	mustAppend(t, st, ledger.Message{StreamSeq: 1, Subject: ev.Subject, Time: at, Events: []event.Event{ev}})
	rec, err := st.Get(1)
	if err != nil || !rec.StreamTime().Equal(ev.Time) {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	if seq, err := st.SeqAtTime(ev.Time); err != nil || seq != 1 {
		t.Errorf("SeqAtTime = %d, %v", seq, err)
	}
}
