package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// integrityFixture writes 7 records into dir, closes it, and leaves the
// verified checkpoint at record cp (0: none), as a crash after appending
// the records past it would.
func integrityFixture(t *testing.T, dir string, cp uint64) {
	t.Helper()
	st := ledgertest.OpenDir(t, dir)
	kit := ledgertest.NewKit(t)
	for i := uint64(1); i <= 7; i++ {
		mustAppend(t, st, kit.Message(i, kit.Node, started("r", 1)...))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ledgertest.SetCheckpoint(t, dir, cp)
}

func mustCheck(t *testing.T, st *ledger.Store) ledger.ChainReport {
	t.Helper()
	rep, err := st.CheckChain(context.Background())
	if err != nil || !rep.OK {
		t.Fatalf("CheckChain = %+v, %v; want OK", rep, err)
	}
	return rep
}

// The start-up check walks the chain from the verified checkpoint in full
// and re-hashes what lies below it, then moves the checkpoint to the head.
func TestCheckChainMovesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	integrityFixture(t, dir, 4)
	st := ledgertest.OpenDir(t, dir)
	cp, err := st.VerifiedCheckpoint()
	if err != nil || cp.Seq != 4 {
		t.Fatalf("checkpoint %+v, %v; want seq 4", cp, err)
	}
	rep := mustCheck(t, st)
	if rep.From != 4 || rep.Checked != 3 {
		t.Errorf("report %+v, want from 4, 3 checked", rep)
	}
	seq, hash := st.Head()
	if cp, _ := st.VerifiedCheckpoint(); cp.Seq != seq || cp.Hash != hash {
		t.Errorf("checkpoint %+v after the check, want the head %d", cp, seq)
	}
	if rep := mustCheck(t, st); rep.Checked != 0 {
		t.Errorf("second check %+v, want none in full", rep)
	}
	if rep, err := st.Relink(context.Background()); err != nil || !rep.OK || rep.Linked != 7 {
		t.Errorf("Relink = %+v, %v; want 7 records re-hashed", rep, err)
	}
	// An OK Verify moves it, and so does Close.
	kit := ledgertest.NewKit(t)
	mustAppend(t, st, kit.Message(8, kit.Node, started("r", 1)...))
	if rep, err := st.Verify(nil); err != nil || !rep.OK {
		t.Fatal(rep, err)
	}
	if cp, _ := st.VerifiedCheckpoint(); cp.Seq != 8 {
		t.Errorf("checkpoint at %d after Verify, want 8", cp.Seq)
	}
	mustAppend(t, st, kit.Message(9, kit.Node, started("r", 1)...))
	st.Close()
	st = ledgertest.OpenDir(t, dir)
	if cp, _ := st.VerifiedCheckpoint(); cp.Seq != 9 {
		t.Errorf("checkpoint at %d after Close, want 9", cp.Seq)
	}
	// A store closed without a check leaves it alone.
	mustAppend(t, st, kit.Message(10, kit.Node, started("r", 1)...))
	st.Close()
	st = ledgertest.OpenDir(t, dir)
	if cp, _ := st.VerifiedCheckpoint(); cp.Seq != 9 {
		t.Errorf("checkpoint at %d after a Close without a check, want 9", cp.Seq)
	}
}

// A record rewritten behind the ledger's back is found wherever it lies:
// after the checkpoint (CheckChain, checked in full), before it (Relink,
// re-hashed), or before it with every hash recomputed (CheckChain: the
// checkpoint's hash differs). After a failed check nothing is appended.
func TestCheckChainFindsRewrittenRecord(t *testing.T) {
	flip := func(ev *event.Event) { ev.Type = event.TaskFinished }
	checkChain := func(st *ledger.Store) (ledger.ChainReport, error) { return st.CheckChain(context.Background()) }
	relink := func(st *ledger.Store) (ledger.ChainReport, error) { return st.Relink(context.Background()) }
	for _, tc := range []struct {
		name   string
		seq    uint64
		cp     uint64 // the verified checkpoint
		tamper func(t *testing.T, dir string)
		check  func(st *ledger.Store) (ledger.ChainReport, error)
		want   string
	}{
		{name: "after the checkpoint", seq: 6, cp: 4, check: checkChain, want: "record 6 does not chain"},
		{name: "no checkpoint", seq: 2, check: checkChain, want: "record 2 does not chain"},
		{name: "below the checkpoint", seq: 2, cp: 4, check: relink, want: "record 2 does not chain"},
		{name: "below the checkpoint, rechained", seq: 2, cp: 4, tamper: func(t *testing.T, dir string) {
			st := ledgertest.OpenDir(t, dir)
			rechain(t, st, 2)
			st.Close()
		}, check: checkChain, want: "does not match the verified checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			integrityFixture(t, dir, tc.cp)
			ledgertest.RewriteRecord(t, dir, tc.seq, flip)
			if tc.tamper != nil {
				tc.tamper(t, dir)
			}
			st := ledgertest.OpenDir(t, dir)
			cpBefore, _ := st.VerifiedCheckpoint()
			rep, err := tc.check(st)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || !strings.Contains(rep.Err, tc.want) {
				t.Fatalf("check = %+v, want a failure %q", rep, tc.want)
			}
			if cp, _ := st.VerifiedCheckpoint(); cp != cpBefore {
				t.Errorf("a failed check moved the checkpoint from %d to %d", cpBefore.Seq, cp.Seq)
			}
			kit := ledgertest.NewKit(t)
			if _, err := st.Append([]ledger.Message{kit.Message(8, kit.Node, started("r", 1)...)}); !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Append after a failed check = %v, want ErrCorrupt", err)
			}
			// Closed and opened again, it still fails.
			st.Close()
			st = ledgertest.OpenDir(t, dir)
			if rep, err := tc.check(st); err != nil || rep.OK {
				t.Errorf("second check after a failed one: %+v, %v; want a failure", rep, err)
			}
		})
	}
}

// A check ends with its context.
func TestCheckChainStopsWithContext(t *testing.T) {
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	kit := ledgertest.NewKit(t)
	for i := uint64(1); i <= 20; i++ {
		mustAppend(t, st, kit.Message(i, kit.Node, started("r", 512)...))
	}
	mustCheck(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Relink(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Relink with an ended context = %v", err)
	}
	ledger.RawDelete(st, []byte(ledger.VerifiedKey))
	if _, err := st.CheckChain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckChain with an ended context = %v", err)
	}
}

// A flipped byte in a table is reported as ErrCorrupt, never a panic: by
// the start-up check when it lies in the records, else by the first read
// that hits it; once Pebble saw it, nothing more is appended.
func TestDamagedTableIsCorruptNotPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   float64
		read func(st *ledger.Store) error
	}{
		{"in the records: the check finds it", 0.1, func(st *ledger.Store) error {
			_, err := st.CheckChain(context.Background())
			return err
		}},
		{"in the messages: a scan finds it", 0.7, func(st *ledger.Store) error {
			if rep, err := st.CheckChain(context.Background()); err != nil || !rep.OK {
				return fmt.Errorf("the check read the messages: %+v, %w", rep, err)
			}
			for _, err := range st.Scan(1) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := ledgertest.OpenDir(t, dir)
			kit := ledgertest.NewKit(t)
			for i := uint64(1); i <= 200; i++ {
				mustAppend(t, st, kit.Message(i, kit.Node, started("r", 3)...))
			}
			st.Close()
			ledgertest.CorruptTable(t, dir, tc.at)
			st = ledgertest.OpenDir(t, dir)
			err := tc.read(st)
			if !errors.Is(err, ledger.ErrCorrupt) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("read after a flipped byte: %v; want ErrCorrupt on one line", err)
			}
			if st.Corruption() == nil {
				t.Error("Corruption() = nil after a damaged read")
			}
			if _, err := st.Append([]ledger.Message{kit.Message(201, kit.Node, started("r", 1)...)}); !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Append on a damaged store = %v, want ErrCorrupt", err)
			}
		})
	}
}

// A flipped byte anywhere in a table (data, index, filter, footer) never
// panics: Open, CheckChain, Scan and Verify answer errors.
func TestDamagedTableNeverPanics(t *testing.T) {
	for i := range 40 {
		at := (float64(i) + 0.5) / 40
		t.Run(fmt.Sprintf("at %.3f", at), func(t *testing.T) {
			dir := t.TempDir()
			st := ledgertest.OpenDir(t, dir)
			kit := ledgertest.NewKit(t)
			for i := uint64(1); i <= 50; i++ {
				mustAppend(t, st, kit.Message(i, kit.Node, started("r", 3)...))
			}
			st.Close()
			ledgertest.CorruptTable(t, dir, at)
			st, err := ledger.Open(dir, ledger.Options{Logger: ledgertest.Logger(t)})
			if err != nil {
				return
			}
			defer st.Close()
			_, _ = st.CheckChain(context.Background())
			for _, err := range st.Scan(1) {
				if err != nil {
					break
				}
			}
			_, _ = st.Verify(nil)
		})
	}
}
