// Package replay checks recorded history against the orchestrator's
// current code, without side effects: it folds the ledger's events in
// order and, for every decision a leader recorded, decides again on the
// same state, at the same time, with the same epoch and the same decisions
// in flight, and reports where the current code would have decided
// otherwise. Nothing is emitted, nothing runs; recorded step results and
// model answers are simply events folded like the others.
//
// It is how an upgrade is checked against real history (`agentctl run
// replay RUN`), and how a change to the scheduling rules is caught by a
// test.
//
// A decision names its basis (event.Decision.Basis: the ledger position
// of the state its leader decided on); decisions recorded before bases
// existed are checked against the state just before them, which is exact
// for a leader that decided on every event and approximate otherwise.
// Decisions of one Decide call share basis and time; the decisions of
// earlier calls that had not landed by a call's basis were in flight for
// it, exactly as the leader's loop tracked them.
//
// Invariants:
//
//  1. Pure: the result depends only on the events given.
//  2. Memory holds the fold's live state and a window of Window events
//     read ahead of the fold, whatever the history's length.
//  3. A decision checked is reproduced or reported: missing (the current
//     code does not make it) or different (same id, other payload).
//     Membership decisions (node.*, from gossip) and leader elections are
//     inputs, folded and not checked; fenced decisions (of a deposed
//     leader) are counted.
package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/artifacts"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// Window is how many events are read ahead of the fold to find the
// decisions made on a state: a decision that lands further than this
// after its basis is reported as unverifiable.
const Window = 4096

// checked are the decision types Decide makes.
var checked = map[event.Type]bool{
	event.PlanAccepted: true, event.TaskAssigned: true, event.TaskCancel: true,
	event.RunFinished: true, event.GateOpened: true, event.GateClosed: true,
	event.PlanReplanRequested: true, event.CritiqueRequested: true,
}

// Options select what is checked.
type Options struct {
	// Run, when set, checks only that run's decisions (every event is
	// still folded: other runs share the executors). Reading stops once
	// the run's last decision is checked.
	Run string
	// Decide is the decision function to check with; nil: the current
	// core.Decide. Tests pass a changed one to see divergence.
	Decide func(s *core.State, now time.Time, epoch uint64, inflight map[core.DecisionKey]bool) ([]core.Decision, time.Time)
}

// Divergence is one recorded decision the current code does not
// reproduce.
type Divergence struct {
	Seq  uint64     `json:"seq"`
	Type event.Type `json:"type"`
	Run  string     `json:"run,omitempty"`
	ID   string     `json:"id"`
	// Problem says what differs.
	Problem string `json:"problem"`
	// Recorded is the recorded payload; Now the current code's, when it
	// made a decision with the same id.
	Recorded json.RawMessage `json:"recorded"`
	Now      json.RawMessage `json:"now,omitempty"`
}

// Report is what a replay found.
type Report struct {
	// Events folded.
	Events uint64 `json:"events"`
	// Checked decisions, of which Reproduced matched exactly.
	Checked    int `json:"checked"`
	Reproduced int `json:"reproduced"`
	// Fenced decisions of deposed leaders, not checked.
	Fenced int `json:"fenced"`
	// Unverifiable decisions whose basis had been folded past before they
	// were read (beyond Window).
	Unverifiable int          `json:"unverifiable"`
	Divergences  []Divergence `json:"divergences"`
	// Finished is the checked run's final status, when it finished.
	Finished event.RunStatus `json:"finished,omitempty"`
}

// Diverged reports whether any decision was not reproduced.
func (r *Report) Diverged() bool { return len(r.Divergences) > 0 }

// recorded is a decision read from history, waiting for its basis.
type recorded struct {
	ev    event.Event
	epoch uint64
	basis uint64
}

// call groups the decisions one Decide call made: same epoch, basis, time.
type call struct {
	epoch uint64
	basis uint64
	at    time.Time
	ds    []recorded
}

// replayer holds a replay's state.
type replayer struct {
	opts  Options
	state *core.State
	// mem is the memory fold, at the state's position.
	mem *memory.Memory
	// arts is the artifact fold, at the state's position.
	arts   *artifacts.Fold
	ahead  []event.Event
	byBase map[uint64][]recorded
	// emitted are the keys of reproduced decisions, by id, with the
	// position they landed at and the epoch that made them: in flight for
	// later calls whose basis is before that position.
	emitted map[string]emitted
	rep     Report
	open    int // recorded decisions of the run not yet checked
	ended   bool
}

type emitted struct {
	key   core.DecisionKey
	seq   uint64
	epoch uint64
	basis uint64
	at    time.Time
}

// Check folds events (ledger order, from the first) and checks the
// recorded decisions against the current code.
func Check(events iter.Seq2[event.Event, error], opts Options) (*Report, error) {
	// The memory facts steps' ${memory:…} references are resolved with,
	// folded to the same position as the state.
	mem := memory.New()
	arts := artifacts.New()
	if opts.Decide == nil {
		opts.Decide = func(s *core.State, now time.Time, epoch uint64, inflight map[core.DecisionKey]bool) ([]core.Decision, time.Time) {
			return core.DecideWith(s, now, epoch, inflight, core.Options{Facts: mem, Artifacts: arts})
		}
	}
	r := &replayer{opts: opts, state: core.NewState(), mem: mem, arts: arts, byBase: map[uint64][]recorded{}, emitted: map[string]emitted{}}
	for ev, err := range events {
		if err != nil {
			return &r.rep, fmt.Errorf("replay: read the ledger after seq %d: %w", r.state.Seq, err)
		}
		r.read(ev)
		for len(r.ahead) > Window {
			r.step()
		}
		if r.ended && r.open == 0 {
			break
		}
	}
	for len(r.ahead) > 0 {
		r.step()
	}
	// Decisions whose basis is the last event folded.
	r.checkBasis(r.state.Seq)
	return &r.rep, nil
}

// read takes one event in: registered under its basis if it is a decision
// to check, then queued for the fold.
func (r *replayer) read(ev event.Event) {
	if checked[ev.Type] && (r.opts.Run == "" || ev.Run == r.opts.Run) {
		var d event.Decision
		if err := json.Unmarshal(ev.Data, &d); err == nil {
			basis := d.Basis
			if basis == 0 && ev.Seq > 0 {
				basis = ev.Seq - 1
			}
			if basis < r.state.Seq {
				r.rep.Unverifiable++
			} else {
				r.byBase[basis] = append(r.byBase[basis], recorded{ev: ev, epoch: d.Epoch, basis: basis})
				r.open++
			}
		}
		if ev.Type == event.RunFinished && r.opts.Run != "" {
			r.ended = true
			var f event.RunFinishedData
			if json.Unmarshal(ev.Data, &f) == nil {
				r.rep.Finished = f.Status
			}
		}
	}
	r.ahead = append(r.ahead, ev)
}

// step checks the decisions made on the current state, then folds the next
// event.
func (r *replayer) step() {
	ev := r.ahead[0]
	r.ahead = r.ahead[1:]
	r.checkBasis(r.state.Seq)
	r.state.Apply(ev)
	r.mem.Fold(ev)
	r.arts.Fold(ev)
	r.rep.Events++
}

// checkBasis checks every recorded decision made on the state at basis.
func (r *replayer) checkBasis(basis uint64) {
	ds := r.byBase[basis]
	if len(ds) == 0 {
		return
	}
	delete(r.byBase, basis)
	for _, c := range calls(ds) {
		r.check(c)
	}
}

// calls groups decisions into Decide calls, in the order they were made.
func calls(ds []recorded) []call {
	var out []call
	for _, d := range ds {
		i := sort.Search(len(out), func(i int) bool { return !out[i].before(d) })
		if i < len(out) && out[i].epoch == d.epoch && out[i].at.Equal(d.ev.Time) {
			out[i].ds = append(out[i].ds, d)
			continue
		}
		out = append(out, call{})
		copy(out[i+1:], out[i:])
		out[i] = call{epoch: d.epoch, basis: d.basis, at: d.ev.Time, ds: []recorded{d}}
	}
	return out
}

// before orders calls by epoch, then time.
func (c call) before(d recorded) bool {
	if c.epoch != d.epoch {
		return c.epoch < d.epoch
	}
	return c.at.Before(d.ev.Time)
}

// check decides again for one call and compares.
func (r *replayer) check(c call) {
	if c.epoch < r.state.Epoch {
		r.rep.Fenced += len(c.ds)
		r.open -= len(c.ds)
		return
	}
	inflight := map[core.DecisionKey]bool{}
	for _, e := range r.emitted {
		if e.epoch == c.epoch && e.seq > c.basis && (e.basis < c.basis || e.at.Before(c.at)) {
			inflight[e.key] = true
		}
	}
	made, _ := r.opts.Decide(r.state, c.at, c.epoch, inflight)
	byID := make(map[string]core.Decision, len(made))
	for _, d := range made {
		byID[d.Draft.ID] = d
	}
	for _, d := range c.ds {
		r.open--
		r.rep.Checked++
		now, ok := byID[d.ev.ID]
		switch {
		case !ok:
			r.diverge(d, "the current code does not make this decision on the state it was made on", nil)
		case now.Draft.Type != d.ev.Type || now.Draft.Run != d.ev.Run:
			r.diverge(d, fmt.Sprintf("the current code makes a %s for run %s with this id", now.Draft.Type, now.Draft.Run), now.Draft.Data)
		case !sameJSON(now.Draft.Data, d.ev.Data):
			r.diverge(d, "the current code decides with another payload", now.Draft.Data)
		default:
			r.rep.Reproduced++
		}
		if ok {
			r.emitted[d.ev.ID] = emitted{key: now.Key, seq: d.ev.Seq, epoch: d.epoch, basis: d.basis, at: d.ev.Time}
		}
	}
	// Keys that landed long ago cannot be in flight any more.
	for id, e := range r.emitted {
		if e.seq <= c.basis {
			delete(r.emitted, id)
		}
	}
}

func (r *replayer) diverge(d recorded, problem string, now json.RawMessage) {
	r.rep.Divergences = append(r.rep.Divergences, Divergence{
		Seq: d.ev.Seq, Type: d.ev.Type, Run: d.ev.Run, ID: d.ev.ID, Problem: problem, Recorded: d.ev.Data, Now: now,
	})
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
