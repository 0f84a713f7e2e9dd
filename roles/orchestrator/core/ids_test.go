package core

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/google/uuid"
)

// TestDecisionIDs: ids are UUIDv8 in the form of event ids, differ by epoch
// and by every field of the key, and are pinned (changing the derivation
// changes every recorded decision's id, which replays compare; the pinned
// value was computed apart, with Python's hashlib and uuid).
func TestDecisionIDs(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	keys := []DecisionKey{
		acceptKey("r1", 1), acceptKey("r1", 2), acceptKey("r2", 1),
		assignKey("r1", "a", 1, "n1"), assignKey("r1", "a", 1, "n2"), assignKey("r1", "a", 2, "n1"),
		assignKey("r1", "b", 1, "n1"), assignKey("r1", "a/1", 2, "n"), assignKey("r1/a", "1", 2, "n"),
		assignKey("r1", "a", 12, "n"), assignKey("r1", "a1", 2, "n"),
		cancelKey("r1", "a", 1), finishKey("r1"), finishKey("r2"),
		{Kind: "gate", Run: "r1", Step: "a", Attempt: 1},
	}
	seen := map[string]string{}
	for _, epoch := range []uint64{1, 2, 1 << 40} {
		for _, k := range keys {
			id := DecisionID(epoch, k)
			u, err := uuid.Parse(id)
			if err != nil || !form.MatchString(id) || u.Version() != 8 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("DecisionID(%d, %s) = %q: not a UUIDv8 (%v)", epoch, k, id, err)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("DecisionID(%d, %s) = DecisionID of %s", epoch, k, other)
			}
			seen[id] = k.String()
			if DecisionID(epoch, k) != id {
				t.Fatalf("DecisionID(%d, %s) is not stable", epoch, k)
			}
		}
	}
	if got, want := DecisionID(7, assignKey("0196f3c2", "build", 3, "node-b")), "bce5d033-7e2c-8d78-a9fe-077bb67447ac"; got != want {
		t.Errorf("pinned DecisionID = %s, want %s", got, want)
	}
}

// TestDecideIsPure: Decide and ReconcileMembers over the same ledger give
// byte-identical drafts, ids and times included: twice over one state, and
// over states
// folded from zero or from a snapshot taken anywhere, with the same
// decisions in flight; every id is DecisionID(epoch, key).
func TestDecideIsPure(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 10
	}
	decided := 0
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		rng := rand.New(rand.NewPCG(seed, 11))
		for range 15 {
			for range 20 {
				m.step()
			}
			inflight := map[DecisionKey]bool{}
			for _, d := range m.held {
				inflight[d.Key] = rng.IntN(2) == 0
			}
			events := m.l.events
			cut := rng.IntN(len(events) + 1)
			restored, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:cut])))
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range events[cut:] {
				restored.Apply(ev)
			}
			var out [][]byte
			for _, s := range []*State{m.s, m.s, foldAll(events), restored} {
				ds, wake := Decide(s, m.now, m.epoch, inflight)
				nds, nwake := ReconcileMembers(s, m.view(), m.now, m.epoch, inflight)
				ds = append(ds, nds...)
				if nwake.After(wake) {
					wake = nwake
				}
				for _, d := range ds {
					if d.Draft.ID != DecisionID(m.epoch, d.Key) || !d.Draft.Time.Equal(m.now) {
						t.Fatalf("seed %d: decision %s: id %s, time %v", seed, d.Key, d.Draft.ID, d.Draft.Time)
					}
				}
				b, err := json.Marshal(struct {
					D    []Decision
					Wake any
				}{ds, wake})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
				decided += len(ds)
			}
			for i := 1; i < len(out); i++ {
				if !bytes.Equal(out[i], out[0]) {
					t.Fatalf("seed %d (cut %d): Decide %d differs:\n got %s\nwant %s", seed, cut, i, out[i], out[0])
				}
			}
		}
	}
	if decided == 0 {
		t.Fatal("no decisions: the property says little")
	}
}

// TestNoIDIsDecidedTwice: over random histories (decisions held in flight,
// committed late, fenced after elections), Decide never makes a decision
// whose id the ledger already holds: a key whose event was folded is not
// decided again in its epoch, and other epochs give other ids. So the
// ledger, which refuses a repeated id, never refuses a decision a leader
// waits for.
func TestNoIDIsDecidedTwice(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	committed := 0
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		for range 400 {
			m.step()
		}
		if m.reused != 0 || m.refused != 0 {
			t.Fatalf("seed %d: %d decisions with an id the ledger holds, %d refused", seed, m.reused, m.refused)
		}
		for _, ev := range m.l.events {
			if isDecision(ev.Type) {
				committed++
			}
		}
	}
	if committed == 0 {
		t.Fatal("no decision committed")
	}
}

// TestDecisionAppliesOncePerKey: over random histories, a decision that
// applied changes nothing when a copy of it (same key, another id, the
// same or a newer epoch) is folded again — at once, or after the events
// that followed it. Counters aside (the copy counts as ignored).
func TestDecisionAppliesOncePerKey(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 10
	}
	copies := map[event.Type]int{}
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		for range 300 {
			m.step()
		}
		rng := rand.New(rand.NewPCG(seed, 13))
		s := policied()
		var applied []event.Event // decisions that changed the state
		var l ledger
		l.seq = m.l.seq
		for _, ev := range m.l.events {
			before := s.Ignored + s.Fenced
			s.Apply(ev)
			if isDecision(ev.Type) && ev.Type != event.LeaderElected && s.Ignored+s.Fenced == before {
				if rng.IntN(3) == 0 {
					refold(t, s, &l, ev, rng, copies)
				}
				// A membership decision states what the membership says of
				// a node: a copy folded at once changes nothing, but one
				// folded after the node changed again would. No leader makes
				// such a copy: it decides from its fold, where the decision
				// is, and fencing voids a deposed leader's.
				if !isNodeDecision(ev.Type) {
					applied = append(applied, ev)
				}
			}
			if len(applied) > 0 && rng.IntN(10) == 0 {
				refold(t, s, &l, applied[rng.IntN(len(applied))], rng, copies)
			}
		}
	}
	for _, typ := range []event.Type{event.PlanAccepted, event.TaskAssigned, event.TaskCancel, event.RunFinished,
		event.NodeJoined, event.NodeSuspect, event.NodeFailed, event.NodeLeft} {
		if copies[typ] == 0 {
			t.Errorf("no copy of a %s was folded: %v", typ, copies)
		}
	}
}

// refold folds a copy of decision ev (a new id, the same or a newer epoch)
// into a copy of s and fails if the copy changed anything but counters.
func refold(t *testing.T, s *State, l *ledger, ev event.Event, rng *rand.Rand, copies map[event.Type]int) {
	t.Helper()
	var payload map[string]any
	if err := json.Unmarshal(ev.Data, &payload); err != nil {
		t.Fatal(err)
	}
	epoch := uint64(payload["epoch"].(float64))
	epoch = max(epoch, s.Epoch) + uint64(rng.IntN(2))
	payload["epoch"] = epoch
	again := l.add(ev.Type, ev.Run, ev.Node, ev.Time, payload)
	again.ID = "copy-" + ev.ID
	twin, err := UnmarshalSnapshot(mustSnapshot(t, s))
	if err != nil {
		t.Fatal(err)
	}
	twin.Apply(again)
	if twin.Ignored != s.Ignored+1 {
		t.Fatalf("copy of %s %s (epoch %d) was not ignored", ev.Type, ev.Data, epoch)
	}
	a, b := *s, *twin
	for _, x := range []*State{&a, &b} {
		x.Seq, x.Ignored, x.Fenced = 0, 0, 0
	}
	if !bytes.Equal(mustSnapshot(t, &a), mustSnapshot(t, &b)) {
		t.Fatalf("copy of %s %s (epoch %d) changed the state:\n got %s\nwant %s", ev.Type, ev.Data, epoch, mustSnapshot(t, &b), mustSnapshot(t, &a))
	}
	copies[ev.Type]++
}

// isDecision reports whether t is an orchestrator decision.
func isDecision(t event.Type) bool {
	switch t {
	case event.LeaderElected, event.PlanAccepted, event.TaskAssigned, event.TaskCancel, event.RunFinished:
		return true
	}
	return isNodeDecision(t)
}

// isNodeDecision reports whether t is a membership decision.
func isNodeDecision(t event.Type) bool {
	switch t {
	case event.NodeJoined, event.NodeSuspect, event.NodeFailed, event.NodeLeft:
		return true
	}
	return false
}
