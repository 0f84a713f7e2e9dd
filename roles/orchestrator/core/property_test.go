package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// foldAll folds events into a fresh state.
func foldAll(events []event.Event) *State {
	s := policied()
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

// decisionsOf renders Decide's output, ids included.
func decisionsOf(s *State, now time.Time, epoch uint64) string {
	ds, wake := Decide(s, now, epoch, nil)
	var b bytes.Buffer
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s %s %s %s %s %s\n", d.Key, d.Draft.ID, d.Draft.Type, d.Draft.Run, d.Draft.Target, d.Draft.Time, d.Draft.Data)
	}
	fmt.Fprintf(&b, "wake %s\n", wake)
	return b.String()
}

// noOvercommit checks invariant 4: no executor holds more steps than its
// capacity (slots + queue). A node's capacity can drop (its record made
// anew from gossip metadata, which announces no queue) while it still
// holds steps, so the bound is the highest capacity it ever had. It also
// checks that the index of the slots held (onNode) is what the runs say.
func noOvercommit(t *testing.T) func(*State) {
	most := map[string]int{}
	return func(s *State) {
		for node, ex := range s.Executors {
			most[node] = max(most[node], ex.Capacity())
		}
		for node, n := range s.busy() {
			if s.Executors[node] == nil || n > most[node] {
				t.Fatalf("seq %d: node %s holds %d steps, capacity at most %d", s.Seq, node, n, most[node])
			}
		}
		want := map[string]int{}
		for _, r := range s.Runs {
			for _, st := range r.Steps {
				if st.Active() && st.Node != "" { // a critique holds no slot
					want[st.Node]++
				}
			}
		}
		if !maps.Equal(want, s.busy()) {
			t.Fatalf("seq %d: the slots index says %v, the runs %v", s.Seq, s.busy(), want)
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
		// Finished runs have left the state: count them from the changes
		// a tracking fold reports.
		tracked := policied()
		tracked.TrackChanges()
		for _, ev := range events {
			tracked.Apply(ev)
			for _, c := range tracked.TakeChanges().Runs {
				if c.Evicted {
					outcomes[string(c.Run.Status)]++
				}
			}
		}
		for _, r := range full.Runs {
			if r.Terminal() {
				t.Fatalf("seed %d: finished run %s is still in State", seed, r.ID)
			}
			outcomes[string(r.Status)]++
		}
		outcomes["fenced"] += int(full.Fenced)
		outcomes["superseded"] += int(full.Superseded)
	}
	// The generator must reach the interesting places, or the property
	// says little.
	for _, k := range []string{string(RunSucceeded), string(RunFailed), string(RunCancelled), string(RunRunning), "fenced", "superseded"} {
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
		{"no state", `{"version":8}`, nil},
		{"version 1 (held finished runs)", `{"version":1,"state":{}}`, ErrSnapshotVersion},
		{"version 2 (before codes)", `{"version":2,"state":{}}`, ErrSnapshotVersion},
		{"version 3 (before membership and reassignment)", `{"version":3,"state":{}}`, ErrSnapshotVersion},
		{"version 5 (before compensation)", `{"version":5,"state":{}}`, ErrSnapshotVersion},
		{"policy not its hash", `{"version":8,"state":{"policy":{"version":1,"hash":"sha256:00","text":"default: allow\n"}}}`, nil},
		{"null executor", `{"version":8,"state":{"executors":{"n1":null}}}`, nil},
		{"null node", `{"version":8,"state":{"nodes":{"n1":null}}}`, nil},
		{"finished run", `{"version":8,"state":{"runs":{"a":{"id":"a","status":"succeeded"}}}}`, nil},
		{"misfiled run", `{"version":8,"state":{"runs":{"a":{"id":"b"}}}}`, nil},
		{"null step", `{"version":8,"state":{"runs":{"a":{"id":"a","status":"running","steps":[null]}}}}`, nil},
		{"null retired step", `{"version":8,"state":{"runs":{"a":{"id":"a","status":"running","retired":[null]}}}}`, nil},
		{"unknown run status", `{"version":8,"state":{"runs":{"a":{"id":"a","status":"sleeping"}}}}`, nil},
		{"run without status", `{"version":8,"state":{"runs":{"a":{"id":"a"}}}}`, nil},
		{"unknown step status", `{"version":8,"state":{"runs":{"a":{"id":"a","status":"running","steps":[{"status":"dozing"}]}}}}`, nil},
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
			if tt.wantErr == nil && errorsIs(err, ErrSnapshotVersion) {
				t.Fatalf("refused for its version (%v), not for what the case is about", err)
			}
		})
	}
	// An empty state round-trips.
	s, err := UnmarshalSnapshot(mustSnapshot(t, policied()))
	if err != nil || s.Runs == nil || s.Executors == nil {
		t.Fatalf("empty round trip: %v %v", s, err)
	}
	var probe map[string]any
	if err := json.Unmarshal(mustSnapshot(t, s), &probe); err != nil || probe["version"] != float64(SnapshotVersion) {
		t.Fatalf("snapshot version field: %v %v", probe, err)
	}
}

// TestChangesNameEveryChange: for random histories, a mirror of the runs
// that rewrites only what TakeChanges names after each event (a run's own
// fields when it is named, the steps named, every step after a new plan)
// always equals the runs' views, and an evicted run's final view. This is
// what lets the run index rewrite only what changed.
func TestChangesNameEveryChange(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	evicted := 0
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		for range 300 {
			m.step()
		}
		s := policied()
		s.TrackChanges()
		mirror := map[string]*RunView{}
		finished := map[string]bool{}
		for _, ev := range m.l.events {
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				id := c.Run.ID
				if finished[id] {
					t.Fatalf("seed %d seq %d: change to run %s after it left State", seed, ev.Seq, id)
				}
				mv := mirror[id]
				if mv == nil { // a new run: written whole
					v := c.Run.View()
					mv = &v
					mirror[id] = mv
				}
				steps := mv.Steps
				*mv = c.Run.View()
				mv.Steps = steps
				if c.Plan {
					mv.Steps = c.Run.View().Steps
				}
				for _, i := range c.Steps {
					mv.Steps[i] = c.Run.StepView(i)
				}
				if c.Evicted {
					if s.Runs[id] != nil || !c.Run.Terminal() {
						t.Fatalf("seed %d seq %d: run %s evicted while %s and in State: %v", seed, ev.Seq, id, c.Run.Status, s.Runs[id] != nil)
					}
					if want := c.Run.View(); !reflect.DeepEqual(*mv, want) {
						t.Fatalf("seed %d seq %d (%s): final view of %s:\n got %+v\nwant %+v", seed, ev.Seq, ev.Type, id, *mv, want)
					}
					finished[id] = true
					delete(mirror, id)
					evicted++
				}
			}
			if len(mirror) != len(s.Runs) {
				t.Fatalf("seed %d seq %d: mirror holds %d runs, State %d", seed, ev.Seq, len(mirror), len(s.Runs))
			}
			for id, r := range s.Runs {
				if want := r.View(); mirror[id] == nil || !reflect.DeepEqual(*mirror[id], want) {
					t.Fatalf("seed %d seq %d (%s): run %s:\n got %+v\nwant %+v", seed, ev.Seq, ev.Type, id, mirror[id], want)
				}
			}
		}
	}
	if evicted == 0 {
		t.Fatal("no run was evicted: the property says little")
	}
}

// TestUntrackedStateRecordsNothing: without TrackChanges, Apply keeps no
// record (the orchestrator role's state never drains one).
func TestUntrackedStateRecordsNothing(t *testing.T) {
	m := newSim(3, func(*State) {})
	for range 200 {
		m.step()
	}
	if m.s.track != nil || len(m.s.TakeChanges().Runs) != 0 {
		t.Fatal("an untracked state recorded changes")
	}
}
