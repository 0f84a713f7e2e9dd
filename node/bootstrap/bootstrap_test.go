package bootstrap

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node/api"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHole(t *testing.T) {
	for _, tc := range []struct {
		applied, first, last uint64
		from, to             uint64
		ok                   bool
	}{
		{applied: 0, first: 0, last: 0},                            // a new stream
		{applied: 0, first: 1, last: 9},                            // a new node, a whole stream
		{applied: 0, first: 5, last: 9, from: 1, to: 4, ok: true},  // a new node after retention
		{applied: 4, first: 5, last: 9},                            // caught up to the first message
		{applied: 9, first: 5, last: 9},                            // at the head
		{applied: 3, first: 5, last: 9, from: 4, to: 4, ok: true},  // away one message too long
		{applied: 3, first: 10, last: 9, from: 4, to: 9, ok: true}, // every message dropped
		{applied: 9, first: 10, last: 9},                           // every message dropped, all folded
		{applied: 12, first: 5, last: 9},                           // a younger stream: the follower refuses it
	} {
		from, to, ok := Hole(tc.applied, tc.first, tc.last)
		if from != tc.from || to != tc.to || ok != tc.ok {
			t.Errorf("Hole(%d, %d, %d) = %d, %d, %v; want %d, %d, %v", tc.applied, tc.first, tc.last, from, to, ok, tc.from, tc.to, tc.ok)
		}
	}
}

// makeLedger writes a ledger of n goal.submitted records in dir and returns
// its head hash.
func makeLedger(t *testing.T, dir string, n int) [32]byte {
	t.Helper()
	st, err := ledger.Open(dir, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	kit := ledgertest.NewKit(t)
	var msgs []ledger.Message
	for i := range n {
		msgs = append(msgs, kit.Message(uint64(i+1), kit.Operator, event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "g"})))
	}
	if _, err := st.Append(msgs); err != nil {
		t.Fatal(err)
	}
	_, h := st.Head()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return h
}

// headOf opens the ledger in dir and returns its head hash.
func headOf(t *testing.T, dir string) [32]byte {
	t.Helper()
	st, err := ledger.Open(dir, ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer st.Close()
	_, h := st.Head()
	return h
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// Every state a crash can leave a bootstrap in comes back to one whole
// ledger: the old one, or the verified copy once it was swapped in.
func TestRecover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) (want [32]byte)
	}{
		{"no bootstrap", func(t *testing.T, dir string) [32]byte {
			return makeLedger(t, dir, 2)
		}},
		{"copy unfinished", func(t *testing.T, dir string) [32]byte {
			old := makeLedger(t, dir, 2)
			if err := os.MkdirAll(dir+copySuffix, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir+copySuffix, "000001.log"), []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
			return old
		}},
		{"copy verified, not swapped", func(t *testing.T, dir string) [32]byte {
			makeLedger(t, dir+copySuffix, 3)
			return makeLedger(t, dir, 2)
		}},
		{"between the renames", func(t *testing.T, dir string) [32]byte {
			makeLedger(t, dir+copySuffix, 3)
			return makeLedger(t, dir+replacedSuffix, 2)
		}},
		{"swapped, old not removed", func(t *testing.T, dir string) [32]byte {
			makeLedger(t, dir+replacedSuffix, 2)
			return makeLedger(t, dir, 3)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			dir := filepath.Join(data, "ledger")
			want := tc.setup(t, dir)
			if err := Recover(dir, ledgertest.Logger(t)); err != nil {
				t.Fatal(err)
			}
			if got := entries(t, data); !slices.Equal(got, []string{"ledger"}) {
				t.Fatalf("after Recover the data dir holds %v, want the ledger alone", got)
			}
			if got := headOf(t, dir); got != want {
				t.Fatalf("ledger head %x, want %x", got, want)
			}
			if err := Recover(dir, ledgertest.Logger(t)); err != nil {
				t.Fatalf("Recover again: %v", err)
			}
		})
	}
}

func TestSwap(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "ledger")
	makeLedger(t, dir, 2)
	want := makeLedger(t, dir+copySuffix, 3)
	if err := swap(dir, ledgertest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, data); !slices.Equal(got, []string{"ledger"}) || headOf(t, dir) != want {
		t.Fatalf("after swap: %v, head %x, want the copy %x alone", got, headOf(t, dir), want)
	}
	// No ledger yet (a new node): the copy simply moves in.
	data = t.TempDir()
	dir = filepath.Join(data, "ledger")
	want = makeLedger(t, dir+copySuffix, 1)
	if err := swap(dir, ledgertest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, data); !slices.Equal(got, []string{"ledger"}) || headOf(t, dir) != want {
		t.Fatalf("after swap into nothing: %v", got)
	}
}

// Peers are asked most advanced first; a peer that has not folded past the
// hole, or no further than this ledger, and the node itself are not asked.
func TestCandidates(t *testing.T) {
	st := ledgertest.Open(t)
	b := &booter{cfg: Config{Self: "me"}, local: st, holeTo: 10}
	got := b.candidates([]api.LedgerHead{
		{Node: "me", Applied: 50},
		{Node: "short", Applied: 9},
		{Node: "b", Applied: 20},
		{Node: "a", Applied: 20},
		{Node: "c", Applied: 30},
		{Node: "", Applied: 40},
		{Node: "edge", Applied: 10},
	})
	var names []string
	for _, h := range got {
		names = append(names, h.Node)
	}
	if want := []string{"c", "a", "b", "edge"}; !slices.Equal(names, want) {
		t.Fatalf("candidates %v, want %v", names, want)
	}
}
