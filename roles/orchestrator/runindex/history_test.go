package runindex

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// history builds a plausible ledger history of real signed messages: an
// operator submits and cancels goals, a planner proposes and rejects plans,
// a leader decides (core.Decide on the state folded so far) and is
// re-elected, executors start and finish attempts with every outcome,
// fail and come back (the leader records it, and an operator decides on
// the steps held), and unrelated, refused and missing messages come in
// between. Stream times
// never go back and are often equal, so that ties are broken by run id.
type history struct {
	t     tb
	kit   *ledgertest.Kit
	ids   map[string]*trust.Identity
	s     *core.State // the fold of what was emitted
	msgs  []ledger.Message
	recs  []ledger.IndexRecord // the events the ledger will hold, with stream times
	seq   uint64               // stream seq of the last message
	now   time.Time            // stream time
	epoch uint64
	runs  int
	// lseq is the ledger seq of the last record, as the ledger will
	// number them (one per event, one per refused message, one per hole
	// in the stream, written when the next message comes).
	lseq    uint64
	holeDue bool
}

// nextSeq is the ledger seq of the next record, after the record of a
// hole the message closes.
func (h *history) nextSeq() uint64 {
	if h.holeDue {
		h.lseq++
		h.holeDue = false
	}
	h.lseq++
	return h.lseq
}

// executors of every history.
var executors = []string{"n1", "n2"}

// tb is what history needs of a *testing.T or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newHistory(t tb, kit *ledgertest.Kit) *history {
	h := &history{t: t, kit: kit, ids: map[string]*trust.Identity{}, s: core.NewState(),
		now: time.Now().UTC().Truncate(time.Second)}
	for _, n := range append([]string{"lead", "planner"}, executors...) {
		h.ids[n] = kit.Identity(n, trust.KindNode, event.NodeRoles...)
	}
	for i, n := range executors {
		h.emit(h.ids[n], event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 1 + i, Incarnation: "i1"}))
	}
	h.elect()
	return h
}

// emit signs one draft as signer into the next stream message, at the
// current stream time.
func (h *history) emit(signer *trust.Identity, d event.Draft) {
	h.t.Helper()
	raw, subject := h.kit.Sign(signer, d)
	h.seq++
	m := h.kit.Receive(h.seq, subject, raw, h.now)
	if m.Reject != nil {
		h.t.Fatalf("history: %s does not verify: %s", d.Type, m.Reject.Reason)
	}
	h.msgs = append(h.msgs, m)
	for _, ev := range m.Events {
		ev.Seq = h.nextSeq()
		h.s.Apply(ev)
		h.recs = append(h.recs, ledger.IndexRecord{Event: ev, StreamTime: h.now})
	}
}

// refused adds a message that fails verification (the ledger records an
// event.rejected for it).
func (h *history) refused() {
	h.seq++
	h.msgs = append(h.msgs, h.kit.Receive(h.seq, "agentic.ev.task.finished", []byte("forged"), h.now))
	h.nextSeq()
}

// gap skips a stream sequence number (the ledger records a ledger.gap).
func (h *history) gap() { h.seq++; h.holeDue = true }

func (h *history) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *history) elect() {
	h.epoch++
	h.emit(h.ids["lead"], event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: h.epoch}, Leader: "lead"}))
}

// submit starts a run; ids share prefixes ("r1", "r10", ...) and goals
// vary in case.
func (h *history) submit(goal string) string {
	h.runs++
	id := fmt.Sprintf("r%d", h.runs)
	h.submitID(id, goal)
	return id
}

// submitID starts a run with the given id.
func (h *history) submitID(id, goal string) {
	h.emit(h.kit.Operator, event.MustDraft(event.GoalSubmitted, id, event.GoalSubmittedData{Goal: goal}))
}

func (h *history) propose(run string, rev int, p event.Plan) {
	h.emit(h.ids["planner"], event.MustDraft(event.PlanProposed, run, event.PlanProposedData{Revision: rev, Source: "file", Plan: p}))
}

func (h *history) reject(run string) {
	h.emit(h.ids["planner"], event.MustDraft(event.PlanRejected, run, event.PlanRejectedData{Error: "no plan"}))
}

func (h *history) cancel(run string) {
	h.emit(h.kit.Operator, event.MustDraft(event.RunCancel, run, event.RunCancelData{Reason: "enough"}))
}

// rate is an operator's rating of a run.
func (h *history) rate(run string, r event.Rating) {
	h.emit(h.kit.Operator, event.MustDraft(event.RunRated, run, event.RunRatedData{Rating: r, Reason: "because", Operator: h.kit.Operator.ID}))
}

func (h *history) memory() {
	h.emit(h.kit.Operator, event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "k", Value: "v"}))
}

// node records what the membership says of an executor node (node.joined
// or node.failed), as the leader would.
func (h *history) node(typ event.Type, node string) {
	h.emit(h.ids["lead"], event.MustDraft(typ, "", event.NodeData{Decision: event.Decision{Epoch: h.epoch}, Node: node,
		Incarnation: "i1", Roles: []string{event.RoleExecutor}, Slots: 1}))
}

// decided is an operator's decision on a step.
func (h *history) decided(run, step string, action event.StepAction) {
	h.emit(h.kit.Operator, event.MustDraft(event.StepDecided, run, event.StepDecidedData{Step: step, Action: action, Reason: "checked"}))
}

// held returns the steps of live runs held for a decision, in a stable
// order.
func (h *history) held() []attempt {
	var out []attempt
	for _, id := range h.liveRuns() {
		for _, st := range h.s.Runs[id].Steps {
			if st.Status == core.StepNeedsDecision {
				out = append(out, attempt{run: id, step: st.Spec.ID, n: st.Attempt, node: st.Node})
			}
		}
	}
	return out
}

// decide emits what the leader decides now; it returns how many decisions.
func (h *history) decide() int {
	ds, _ := core.Decide(h.s, h.now, h.epoch, nil)
	for _, d := range ds {
		h.emit(h.ids["lead"], d.Draft)
	}
	return len(ds)
}

// active returns the assigned or running steps of live runs, in a stable
// order.
func (h *history) active() []attempt {
	var out []attempt
	for _, id := range h.liveRuns() {
		r := h.s.Runs[id]
		for _, st := range r.Steps {
			if st.Active() {
				out = append(out, attempt{run: id, step: st.Spec.ID, n: st.Attempt, node: st.Node, running: st.Status == core.StepRunning})
			}
		}
	}
	return out
}

// liveRuns returns the ids of live runs in submission order.
func (h *history) liveRuns() []string {
	ids := make([]string, 0, len(h.s.Runs))
	for id := range h.s.Runs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(h.s.Runs[a].Order, h.s.Runs[b].Order) })
	return ids
}

type attempt struct {
	run, step, node string
	n               int
	running         bool
}

func (h *history) start(a attempt) {
	h.emit(h.ids[a.node], event.MustDraft(event.TaskStarted, a.run, event.TaskStartedData{Step: a.step, Attempt: a.n, Node: a.node}))
}

// finish reports an attempt's end with one of the outcomes (0..6).
func (h *history) finish(a attempt, outcome int) {
	d := event.TaskFinishedData{Step: a.step, Attempt: a.n, Node: a.node, Status: event.TaskSucceeded, Started: h.now}
	switch outcome {
	case 1:
		d.Status, d.Class, d.Error = event.TaskFailed, event.ClassTransient, "timeout"
	case 2:
		d.Status, d.Class, d.ExitCode = event.TaskFailed, event.ClassLogic, 1
	case 3:
		d.Status, d.Class, d.Error = event.TaskFailed, event.ClassPolicy, "denied"
	case 4:
		d.Status = event.TaskSkipped
	case 5:
		d.Status = event.TaskCancelled
	}
	h.emit(h.ids[a.node], event.MustDraft(event.TaskFinished, a.run, d))
}

// linearPlan is n shell steps, each depending on the one before when chain
// is set; every step may be retried once.
func linearPlan(n int, chain bool, onFailure event.OnFailure) event.Plan {
	var p event.Plan
	for i := range n {
		st := event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: "true", Retries: 1, OnFailure: onFailure,
			Title: strings.Repeat("t", i%3)}
		if chain && i > 0 {
			st.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// runToEnd drives every live run until none is live: decide, start and
// succeed every attempt.
func (h *history) runToEnd() {
	for range 10_000 {
		n := h.decide()
		act := h.active()
		for _, a := range act {
			if !a.running {
				h.start(a)
			}
			h.finish(a, 0)
		}
		if len(h.s.Runs) == 0 {
			return
		}
		if n == 0 && len(act) == 0 {
			h.t.Fatalf("history: runs %v are stuck", h.liveRuns())
		}
	}
	h.t.Fatal("history: runs never end")
}
