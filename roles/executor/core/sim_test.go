package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// t0 is the scripts' and the property test's time zero.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// errSync stands for a failed sync of the local state.
var errSync = fmt.Errorf("test: %w", localstate.ErrSync)

// sim is a shell for tests: it carries out a core's actions against a real
// local state (Pebble on a memory file system) — records, lookups, epochs
// — and plays the processes, and it checks the invariants the core must
// keep on every action. Record actions are answered at once, except
// RecordStarted, which waits for commit (or fail) unless auto is set.
type sim struct {
	t     testing.TB
	core  *Core
	cfg   Config
	store *localstate.Store
	now   time.Time
	auto  bool
	// failNext makes the next record fail as a failed sync.
	failNext bool

	// waiting are the RecordStarted actions not answered yet, by ID.
	waiting map[uint64]RecordStarted
	// running are the attempts whose process the sim started.
	running map[Key]bool
	// finishing are the attempts recorded ahead and cancelled, whose
	// report the sim owes.
	finishing []Key
	// msgs are the deliveries made, by stream sequence; unacked those not
	// yet acknowledged, refused or terminated.
	msgs    map[uint64]Delivery
	unacked map[uint64]bool
	// Invariant bookkeeping.
	starts    map[Key]int
	cancelled map[Key]bool
	unfenced  map[Key]map[uint64]bool // epochs delivered unfenced
	noopsDone map[Key]bool
	drained   bool
	halted    bool
	// gen is the newest backlog arm the core asked to watch.
	gen int
}

func newSim(t testing.TB, cfg Config) *sim {
	st, err := localstate.OpenFS("state", vfs.NewMem(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := &sim{t: t, cfg: cfg, store: st, now: t0, waiting: map[uint64]RecordStarted{}, running: map[Key]bool{},
		msgs: map[uint64]Delivery{}, unacked: map[uint64]bool{}, starts: map[Key]int{}, cancelled: map[Key]bool{},
		unfenced: map[Key]map[uint64]bool{}, noopsDone: map[Key]bool{}}
	s.core = New(cfg)
	return s
}

// step hands in to the core and carries out its actions; it returns
// their lines (answers of records it made, indented beneath).
func (s *sim) step(in Input) []string {
	acts := s.core.Step(in)
	var out []string
	for _, a := range acts {
		out = append(out, a.String())
		for _, l := range s.do(a) {
			out = append(out, "  "+l)
		}
	}
	return out
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("invariant: "+format, args...)
}

// do carries out one action.
func (s *sim) do(a Action) []string {
	switch a := a.(type) {
	case Ack:
		s.checkAck(a.Seq)
		delete(s.unacked, a.Seq)
	case DoubleAck:
		delete(s.unacked, a.Seq)
	case Nak:
		delete(s.unacked, a.Seq)
	case Term:
		delete(s.unacked, a.Seq)
	case RecordStarted:
		for _, at := range append(slices.Clone(a.Start), a.Ahead...) {
			s.checkMayStart(at)
		}
		if !s.auto {
			s.waiting[a.ID] = a
			return nil
		}
		return s.commit(a)
	case StartRecorded:
		s.checkMayStart(a.Attempt)
		s.startProcess(a.Attempt.Key())
	case RecordDropped:
		recs := make([]localstate.Attempt, len(a.Attempts))
		for i, k := range a.Attempts {
			recs[i] = localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt}
		}
		return s.answer(a.ID, func() error { return s.store.MarkDropped(recs...) })
	case RecordEpochs:
		return s.answer(a.ID, func() error {
			for _, ep := range a.Epochs {
				if _, err := s.store.RaiseEpoch(a.Seq, ep); err != nil {
					return err
				}
			}
			return nil
		})
	case RecordDrained:
		return s.answer(a.ID, func() error { return s.store.MarkDrained(a.Seq) })
	case RunNoops:
		return s.answer(a.ID, func() error {
			for _, at := range a.Attempts {
				s.noopsDone[at.Key()] = true
			}
			return nil
		})
	case Forget:
		recs := make([]localstate.Attempt, len(a.Attempts))
		for i, k := range a.Attempts {
			recs[i] = localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt}
		}
		if err := s.store.Forget(recs...); err != nil {
			s.t.Fatal(err)
		}
	case Kill:
		if !s.running[a.Key] && !s.inFlight(a.Key) {
			s.fail("kill of %s, which does not run", a.Key)
		}
	case CancelledBeforeStart:
		if a.Finish {
			k := a.Attempt.Key()
			if err := s.store.MarkFinished(k.Run, k.Step, k.Attempt); err != nil {
				s.t.Fatal(err)
			}
			s.finishing = append(s.finishing, k)
		}
	case WatchBacklog:
		s.gen = a.Gen
	case Recreate:
		s.gen = a.Gen
	case Drained:
		if s.drained {
			s.fail("drained twice")
		}
		s.drained = true
	}
	return nil
}

// inFlight reports whether k is in a start record not answered yet.
func (s *sim) inFlight(k Key) bool {
	for _, r := range s.waiting {
		for _, a := range r.Start {
			if a.Key() == k {
				return true
			}
		}
	}
	return false
}

// answer makes a record (failing it if failNext) and hands the core its
// answer.
func (s *sim) answer(id uint64, rec func() error) []string {
	err := errSync
	if !s.failNext {
		err = rec()
	}
	s.failNext = false
	return s.reply(id, err)
}

func (s *sim) reply(id uint64, err error) []string {
	halt := errors.Is(err, localstate.ErrSync)
	if halt && !s.halted {
		s.halted = true
		s.step(Halt{})
	}
	head := fmt.Sprintf("recorded#%d ok", id)
	if err != nil {
		head = fmt.Sprintf("recorded#%d failed", id)
	}
	return append([]string{head}, s.step(Recorded{ID: id, Err: err, Halt: halt})...)
}

// commit makes the start record r and, if it succeeded, starts its Start
// attempts' processes.
func (s *sim) commit(r RecordStarted) []string {
	delete(s.waiting, r.ID)
	recs := make([]localstate.Attempt, 0, len(r.Start)+len(r.Ahead))
	for _, a := range append(slices.Clone(r.Start), r.Ahead...) {
		k := a.Key()
		recs = append(recs, localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt, State: localstate.StateStarted, Started: r.At})
	}
	err := errSync
	if !s.failNext {
		err = s.store.MarkStarted(recs...)
	}
	s.failNext = false
	if err == nil {
		for _, a := range r.Start {
			s.startProcess(a.Key())
		}
	}
	return s.reply(r.ID, err)
}

// startProcess plays the start of k's process.
func (s *sim) startProcess(k Key) {
	if st, ok, _ := s.store.Lookup(k.Run, k.Step, k.Attempt); !ok || st.State != localstate.StateStarted {
		s.fail("%s started without a started record (%+v)", k, st)
	}
	s.starts[k]++
	if s.starts[k] > 1 {
		s.fail("%s started %d times", k, s.starts[k])
	}
	s.running[k] = true
}

// checkMayStart fails if a is cancelled or was never delivered unfenced.
func (s *sim) checkMayStart(a Attempt) {
	k := a.Key()
	if s.cancelled[k] {
		s.fail("%s starts after a cancel for it", k)
	}
	if !s.unfenced[k][a.Data.Epoch] {
		s.fail("%s (epoch %d) starts, never delivered unfenced", k, a.Data.Epoch)
	}
}

// checkAck fails if the assignment message at seq is acknowledged while
// one of its attempts is neither recorded, nor run (noop), nor held by
// another unacknowledged message.
func (s *sim) checkAck(seq uint64) {
	d, ok := s.msgs[seq]
	if !ok || d.Kind != KindAssign {
		return
	}
	for _, as := range d.Assign {
		k := as.Key()
		if as.Data.Node != s.cfg.Node || as.Data.FencedBy(d.Fence) || as.Recorded != "" {
			continue
		}
		_, rec, _ := s.store.Lookup(k.Run, k.Step, k.Attempt)
		if as.Noop() {
			if !s.noopsDone[k] && !rec && !s.heldElsewhere(seq, k) {
				s.fail("message %d acknowledged before its noop %s ran or was dropped", seq, k)
			}
			continue
		}
		if !rec && !s.heldElsewhere(seq, k) {
			s.fail("message %d acknowledged before %s was recorded", seq, k)
		}
	}
}

func (s *sim) heldElsewhere(seq uint64, k Key) bool {
	for o := range s.unacked {
		if o == seq {
			continue
		}
		for _, as := range s.msgs[o].Assign {
			if as.Key() == k {
				return true
			}
		}
	}
	return false
}

// deliver hands the core a delivery of d, filling in what the shell reads
// from the local state (Fence, Recorded).
func (s *sim) deliver(d Delivery) []string {
	d.Now = s.now
	if d.NumDelivered == 0 {
		d.NumDelivered = 1
	}
	fence, err := s.store.EpochAt(d.Seq)
	if err != nil {
		s.t.Fatal(err)
	}
	d.Fence = fence
	for i, as := range d.Assign {
		if as.Noop() {
			continue
		}
		k := as.Key()
		if rec, ok, _ := s.store.Lookup(k.Run, k.Step, k.Attempt); ok {
			d.Assign[i].Recorded = rec.State
		}
	}
	for i, c := range d.Cancels {
		k := c.Key()
		_, ok, _ := s.store.Lookup(k.Run, k.Step, k.Attempt)
		d.Cancels[i].Recorded = ok
	}
	if !s.halted {
		for _, as := range d.Assign {
			if as.Data.Node == s.cfg.Node && !as.Data.FencedBy(fence) {
				k := as.Key()
				if s.unfenced[k] == nil {
					s.unfenced[k] = map[uint64]bool{}
				}
				s.unfenced[k][as.Data.Epoch] = true
			}
		}
		for _, c := range d.Cancels {
			if c.Data.Node == s.cfg.Node && !c.Data.FencedBy(fence) {
				s.cancelled[c.Key()] = true
			}
		}
	}
	s.msgs[d.Seq] = d
	s.unacked[d.Seq] = true
	return s.step(d)
}

// exit plays the end of k's process: Exited, then Reported.
func (s *sim) exit(k Key) []string {
	if !s.running[k] {
		s.t.Fatalf("%s is not running", k)
	}
	delete(s.running, k)
	if err := s.store.MarkFinished(k.Run, k.Step, k.Attempt); err != nil {
		s.t.Fatal(err)
	}
	return append(s.step(Exited{Key: k}), s.step(Reported{Key: k})...)
}

// assignment builds an assignment of k to node at epoch.
func assignment(k Key, node string, epoch uint64, noop bool) Assignment {
	kind := event.KindShell
	if noop {
		kind = event.KindNoop
	}
	return Assignment{Attempt: Attempt{Run: k.Run, Data: event.TaskAssignedData{
		Decision: event.Decision{Epoch: epoch}, Step: event.Step{ID: k.Step, Kind: kind, Run: "true"}, Attempt: k.Attempt, Node: node,
	}}}
}

// cancelOf builds a cancel of k for node at epoch.
func cancelOf(k Key, node string, epoch uint64, code string) Cancel {
	return Cancel{Run: k.Run, Data: event.TaskCancelData{Decision: event.Decision{Epoch: epoch}, Step: k.Step, Attempt: k.Attempt, Node: node, Code: code}}
}

// parseKey reads "run/step/attempt".
func parseKey(s string) (Key, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Key{}, fmt.Errorf("key %q: want run/step/attempt", s)
	}
	var n int
	if _, err := fmt.Sscan(parts[2], &n); err != nil {
		return Key{}, fmt.Errorf("key %q: %w", s, err)
	}
	return Key{Run: parts[0], Step: parts[1], Attempt: n}, nil
}
