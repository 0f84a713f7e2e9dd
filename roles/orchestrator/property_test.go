package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// foldAll folds events into a fresh state.
func foldAll(events []event.Event) *State {
	s := NewState()
	for _, ev := range events {
		s.Apply(ev)
	}
	return s
}

func mustSnapshot(t *testing.T, s *State) []byte {
	t.Helper()
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decisionsOf renders Decide's output without the random event ids.
func decisionsOf(s *State, now time.Time, epoch uint64) string {
	ds, wake := Decide(s, now, epoch, nil)
	var b bytes.Buffer
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s %s %s %s %s\n", d.Key, d.Draft.Type, d.Draft.Run, d.Draft.Target, d.Draft.Time, d.Draft.Data)
	}
	fmt.Fprintf(&b, "wake %s\n", wake)
	return b.String()
}

// noOvercommit checks invariant 4: no executor holds more steps than its
// slots (the simulator never lowers an executor's slots).
func noOvercommit(t *testing.T) func(*State) {
	return func(s *State) {
		for node, n := range s.busy() {
			if ex := s.Executors[node]; ex == nil || n > ex.Slots {
				t.Fatalf("seq %d: node %s holds %d steps, slots %v", s.Seq, node, n, ex)
			}
		}
	}
}

// TestSnapshotMidwayEqualsFoldFromZero: for random histories, folding from
// zero gives the same state (and the same decisions) as folding a prefix,
// snapshotting, restoring, and folding the rest.
func TestSnapshotMidwayEqualsFoldFromZero(t *testing.T) {
	seeds := 50
	if testing.Short() {
		seeds = 15
	}
	outcomes := map[string]int{}
	for seed := range uint64(seeds) {
		m := newSim(seed, noOvercommit(t))
		for range 200 {
			m.step()
		}
		events := m.l.events
		full := foldAll(events)
		want := mustSnapshot(t, full)
		if got := mustSnapshot(t, m.s); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: refold differs from the simulator's own state", seed)
		}
		wantDecisions := decisionsOf(full, m.now, m.epoch)
		rng := rand.New(rand.NewPCG(seed, 7))
		cuts := []int{0, len(events)}
		for range 2 {
			cuts = append(cuts, rng.IntN(len(events)+1))
		}
		for _, k := range cuts {
			s, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:k])))
			if err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, k, err)
			}
			for _, ev := range events[k:] {
				s.Apply(ev)
			}
			if got := mustSnapshot(t, s); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: snapshot at %d of %d events then the rest differs from folding from zero:\n got %s\nwant %s",
					seed, k, len(events), got, want)
			}
			if got := decisionsOf(s, m.now, m.epoch); got != wantDecisions {
				t.Fatalf("seed %d cut %d: decisions differ:\n got %s\nwant %s", seed, k, got, wantDecisions)
			}
		}
		for _, r := range full.Runs {
			outcomes[r.Status]++
		}
		outcomes["fenced"] += int(full.Fenced)
		outcomes["superseded"] += int(full.Superseded)
	}
	// The generator must reach the interesting places, or the property
	// says little.
	for _, k := range []string{event.RunSucceeded, event.RunFailed, event.RunCancelled, event.RunRunning, "fenced", "superseded"} {
		if outcomes[k] == 0 {
			t.Errorf("no history reached %q: %v", k, outcomes)
		}
	}
	t.Logf("outcomes over %d histories: %v", seeds, outcomes)
}

// TestSnapshotErrors: unknown versions and damaged snapshots are refused.
func TestSnapshotErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"future version", `{"version":99,"state":{}}`, ErrSnapshotVersion},
		{"no version", `{"state":{}}`, ErrSnapshotVersion},
		{"not json", `{`, nil},
		{"no state", `{"version":1}`, nil},
		{"misfiled run", `{"version":1,"state":{"runs":{"a":{"id":"b"}}}}`, nil},
		{"null step", `{"version":1,"state":{"runs":{"a":{"id":"a","steps":[null]}}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := UnmarshalSnapshot([]byte(tt.in))
			if err == nil {
				t.Fatalf("UnmarshalSnapshot(%s) = %v, want error", tt.in, s)
			}
			if tt.wantErr != nil && !errorsIs(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	// An empty state round-trips.
	s, err := UnmarshalSnapshot(mustSnapshot(t, NewState()))
	if err != nil || s.Runs == nil || s.Executors == nil {
		t.Fatalf("empty round trip: %v %v", s, err)
	}
	var probe map[string]any
	if err := json.Unmarshal(mustSnapshot(t, s), &probe); err != nil || probe["version"] != float64(SnapshotVersion) {
		t.Fatalf("snapshot version field: %v %v", probe, err)
	}
}
