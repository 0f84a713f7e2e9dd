package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestProperties drives cores with random input sequences (a fixed seed,
// a bounded count) through the sim, which checks on every action that an
// attempt's process starts at most once, and only once recorded started;
// that no assignment message is acknowledged before its attempts are
// recorded (or run, for noops); and that nothing starts after a cancel for
// it, nor from a deposed leader's assignment. At the end every record is
// answered, every process ends, and the test checks that a drain
// requested finished, or else that every message was settled.
func TestProperties(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for i := range runs {
		seed := uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { property(t, seed) })
	}
}

func property(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := defaultConfig()
	cfg.Slots, cfg.Queue = 1+r.IntN(3), r.IntN(4)
	s := newSim(t, cfg)
	s.step(Begin{Now: s.now, Pending: uint64(r.IntN(3))})
	var seq uint64
	key := func() Key {
		return Key{Run: []string{"r1", "r2"}[r.IntN(2)], Step: []string{"a", "b", "c", "n"}[r.IntN(4)], Attempt: 1 + r.IntN(2)}
	}
	node := func() string {
		if r.IntN(8) == 0 {
			return "n2"
		}
		return "n1"
	}
	drainAsked := false
	for range 40 + r.IntN(60) {
		switch n := r.IntN(100); {
		case n < 22:
			seq++
			d := Delivery{Seq: seq, Kind: KindAssign}
			for range 1 + r.IntN(3) {
				k := key()
				d.Assign = append(d.Assign, assignment(k, node(), uint64(r.IntN(4)), k.Step == "n")) // step n is a noop
			}
			s.deliver(d)
		case n < 30:
			seq++
			d := Delivery{Seq: seq, Kind: KindCancel}
			for range 1 + r.IntN(2) {
				d.Cancels = append(d.Cancels, cancelOf(key(), node(), uint64(r.IntN(4)), "test"))
			}
			s.deliver(d)
		case n < 34:
			seq++
			s.deliver(Delivery{Seq: seq, Kind: KindElect, Epochs: []uint64{uint64(1 + r.IntN(3))}})
		case n < 36:
			seq++
			nd := node()
			drainAsked = drainAsked || (nd == cfg.Node && !s.halted)
			s.deliver(Delivery{Seq: seq, Kind: KindDrain, Drains: []event.NodeDrainData{{Node: nd}}})
		case n < 42:
			if d, ok := s.pickUnacked(r); ok {
				d.NumDelivered++
				d.Assign, d.Cancels = slices.Clone(d.Assign), slices.Clone(d.Cancels)
				s.deliver(d)
			}
		case n < 60:
			s.now = s.now.Add(time.Duration(r.IntN(300)) * time.Millisecond)
			if r.IntN(30) == 0 {
				s.now = s.now.Add(3 * time.Second) // a stall
			}
			s.step(Tick{Now: s.now})
			s.step(Pass{Now: s.now, Paused: r.IntN(10) == 0})
		case n < 75:
			if ids := sortedIDs(s.waiting); len(ids) > 0 {
				id := ids[r.IntN(len(ids))]
				switch f := r.IntN(40); {
				case f == 0:
					delete(s.waiting, id)
					s.reply(id, errSync)
				case f < 8:
					delete(s.waiting, id)
					s.reply(id, fmt.Errorf("test: disk says no"))
				default:
					s.commit(s.waiting[id])
				}
			}
		case n < 88:
			if ks := s.runningKeys(); len(ks) > 0 {
				s.exit(ks[r.IntN(len(ks))])
			}
		case n < 92:
			for _, k := range s.finishing {
				s.step(Reported{Key: k})
			}
			s.finishing = nil
		case n < 96:
			s.step(BacklogRead{Gen: s.gen})
		case n < 98:
			s.step(ConsumerLost{})
		default:
			s.step(Recreated{})
		}
	}
	if s.halted {
		s.step(Release{})
		return
	}
	// Settle: answer every record, end every process, read every backlog.
	for range 200 {
		for _, id := range sortedIDs(s.waiting) {
			s.commit(s.waiting[id])
		}
		for _, k := range s.runningKeys() {
			s.exit(k)
		}
		for _, k := range s.finishing {
			s.step(Reported{Key: k})
		}
		s.finishing = nil
		s.step(Recreated{})
		s.step(BacklogRead{Gen: s.gen})
		s.now = s.now.Add(100 * time.Millisecond)
		s.step(Tick{Now: s.now})
		s.step(Pass{Now: s.now})
		if len(s.waiting) == 0 && len(s.running) == 0 && len(s.finishing) == 0 && s.core.Snapshot().Queued == 0 {
			break
		}
	}
	snap := s.core.Snapshot()
	if snap.Active != 0 || snap.Running != 0 {
		t.Fatalf("settled with %d active, %d running", snap.Active, snap.Running)
	}
	if drainAsked {
		if !s.drained {
			t.Fatalf("a drain was asked and never finished (snapshot %+v)", snap)
		}
		return
	}
	if snap.Queued != 0 || len(s.core.held) != 0 {
		t.Fatalf("settled with %d queued and %d messages held", snap.Queued, len(s.core.held))
	}
	for seq := range s.unacked {
		if d := s.msgs[seq]; d.Kind == KindAssign || d.Kind == KindCancel {
			t.Fatalf("message %d (%v) never settled", seq, d.Kind)
		}
	}
}

// pickUnacked returns a random delivery not yet settled.
func (s *sim) pickUnacked(r *rand.Rand) (Delivery, bool) {
	seqs := make([]uint64, 0, len(s.unacked))
	for seq := range s.unacked {
		seqs = append(seqs, seq)
	}
	if len(seqs) == 0 {
		return Delivery{}, false
	}
	slices.Sort(seqs)
	return s.msgs[seqs[r.IntN(len(seqs))]], true
}

func (s *sim) runningKeys() []Key {
	ks := make([]Key, 0, len(s.running))
	for k := range s.running {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b Key) int {
		if c := compareStr(a.String(), b.String()); c != 0 {
			return c
		}
		return 0
	})
	return ks
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
