package core

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// DefaultReplans bounds a run's replans when the policy in force sets no
// budgets.replans.
const DefaultReplans = 3

// Replanning is the plan revision a run waits for after a step failed
// with on_failure replan: asked for (plan.replan_requested folded), then
// proposed (Next), then accepted (the plan is replaced).
type Replanning struct {
	// Revision is the revision asked for (the one in force + 1).
	Revision int `json:"revision"`
	// Next is the proposed revision, held until the leader accepts it
	// once no step of the run is active.
	Next *Proposal `json:"next,omitempty"`
	// Rejected is the planner's error when it could not replan.
	Rejected string `json:"rejected,omitempty"`
}

// Proposal is a proposed plan revision.
type Proposal struct {
	Source string     `json:"source"`
	Plan   event.Plan `json:"plan"`
}

// replanKey names the replan request of a run's plan revision.
func replanKey(run string, rev int) DecisionKey {
	return DecisionKey{Kind: KindReplan, Run: run, Revision: rev}
}

// replansBudget is the policy's budgets.replans, or DefaultReplans.
func (s *State) replansBudget() int {
	if s.Policy != nil && s.Policy.parsed != nil && s.Policy.parsed.Budgets.Replans > 0 {
		return s.Policy.parsed.Budgets.Replans
	}
	return DefaultReplans
}

// foldReplanRequested records that the leader asked for the next
// revision of a running run's plan.
func foldReplanRequested(s *State, ev event.Event) {
	var d event.PlanReplanRequestedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r := s.Runs[ev.Run]
	if r == nil || (r.Status != RunRunning && r.Status != RunPaused) || d.Revision != r.Revision || r.Replanning != nil {
		s.Ignored++
		return
	}
	r.Replans = d.Replans
	r.Replanning = &Replanning{Revision: d.Revision + 1}
	s.touch(r)
}

// proposeReplan holds the proposed revision a replanning run waits for;
// it reports whether the proposal was for such a run.
func proposeReplan(s *State, r *Run, d event.PlanProposedData) bool {
	if r.Status != RunRunning && r.Status != RunPaused {
		return false
	}
	if r.Replanning == nil || r.Replanning.Next != nil || r.Replanning.Rejected != "" || d.Revision != r.Replanning.Revision {
		s.Ignored++
		return true
	}
	r.Replanning.Next = &Proposal{Source: d.Source, Plan: d.Plan}
	s.touch(r)
	return true
}

// rejectReplan records the planner's rejection of a replan; Decide fails
// the run with it. It reports whether the run was replanning.
func rejectReplan(s *State, r *Run, d event.PlanRejectedData) bool {
	if r.Replanning == nil || r.Replanning.Next != nil || r.Replanning.Rejected != "" {
		return false
	}
	r.Replanning.Rejected = d.Error
	if r.Replanning.Rejected == "" {
		r.Replanning.Rejected = "no reason given"
	}
	s.touch(r)
	return true
}

// acceptReplan replaces the plan of a replanning run with the accepted
// revision. A step of the new revision with the id and the spec of a step
// that succeeded or was skipped keeps that step's state and does not run
// again; any other step is pending (one with an earlier step's id goes on
// counting its attempts, so decision keys stay unique, and its earlier
// attempts do not count against its retries). Steps the revision leaves
// out are gone. It reports whether the run was replanning; a revision
// accepted while a step is active is ignored.
func acceptReplan(s *State, r *Run, d event.PlanAcceptedData, at time.Time) bool {
	if r.Replanning == nil || r.Replanning.Next == nil || d.Revision != r.Replanning.Revision {
		return false
	}
	for _, st := range r.Steps {
		if st.Active() {
			s.Ignored++ // the leader accepts once none is: its steps stay indexed
			return true
		}
	}
	next := r.Replanning.Next
	old := make(map[string]*Step, len(r.Steps))
	for _, st := range r.Steps {
		if st.Compensates == nil {
			old[st.Spec.ID] = st
		}
	}
	steps := make([]*Step, 0, len(next.Plan.Steps))
	for _, spec := range next.Plan.Steps {
		s.Tuning.StepDefaults(next.Plan.Family, &spec) // tuning.go
		o := old[spec.ID]
		switch {
		case o != nil && (o.Status == StepSucceeded || o.Status == StepSkipped || keepFinal(r, o)) && !o.notReached() && reflect.DeepEqual(o.Spec, spec):
			steps = append(steps, o)
		case o != nil:
			steps = append(steps, &Step{Spec: spec, Status: StepPending, Attempt: o.Attempt,
				Reassigned: o.Attempt, Gates: o.Gates, CancelSent: o.CancelSent})
		default:
			steps = append(steps, &Step{Spec: spec, Status: StepPending})
		}
	}
	r.Revision, r.Source, r.Subgoals = d.Revision, next.Source, next.Plan.Subgoals
	r.Open = next.Plan.Open // react.go
	r.retire(steps)
	r.Steps = steps
	r.Replanning = nil
	r.Invalid = r.buildIndex()
	s.touchPlan(r)
	for i, st := range r.Steps {
		s.setWait(r, i)
		if st.Status == StepPending && r.depsDone(i) && !s.skipUnreached(r, i, at) {
			st.ReadyAt = at
			s.touchStep(r, i)
		}
	}
	return true
}

// replan decides for a running run with a step that failed with
// on_failure replan (st): it fails the run when the planner rejected the
// replan, the new revision is invalid or the replans budget is spent;
// asks for the next revision; or accepts it once no step is active. It
// assigns nothing meanwhile.
func (d *decider) replan(r *Run, st *Step, active []*Step) {
	rp := r.Replanning
	switch {
	case rp == nil && r.Replans >= d.s.replansBudget():
		d.stopRun(r, RunFailed, CodeReplansExhausted, fmt.Sprintf("step %s failed: %s; the replans budget (%d) is spent",
			st.Spec.ID, st.Error, d.s.replansBudget()))
	case rp == nil:
		d.requestReplan(r, d.replanRequest(r, st))
	case rp.Rejected != "":
		d.stopRun(r, RunFailed, r.replanRejectedCode(), fmt.Sprintf("step %s failed: %s; replan rejected: %s", st.Spec.ID, st.Error, rp.Rejected))
	case rp.Next == nil && d.awaitReplan(r, st):
	case rp.Next == nil || len(active) > 0:
		// Waiting for the planner, or for the running steps to finish.
	default:
		d.acceptRevision(r, rp)
	}
}

// acceptRevision accepts the proposed revision a replanning run waits
// for, or fails the run when the revision cannot be scheduled.
func (d *decider) acceptRevision(r *Run, rp *Replanning) {
	check := &Run{ID: r.ID, Status: RunSubmitted, Steps: make([]*Step, len(rp.Next.Plan.Steps))}
	for i, spec := range rp.Next.Plan.Steps {
		check.Steps[i] = &Step{Spec: spec, Status: StepPending}
	}
	if bad := check.buildIndex(); bad != "" {
		d.stopRun(r, RunFailed, CodePlanInvalid, fmt.Sprintf("invalid plan revision %d: %s", rp.Revision, bad))
		return
	}
	d.emit(acceptKey(r.ID, rp.Revision), event.PlanAccepted, r.ID, "",
		event.PlanAcceptedData{Decision: d.decision(), Revision: rp.Revision})
}

// replanRequest is the plan.replan_requested payload for run r whose step
// st failed.
func (d *decider) replanRequest(r *Run, st *Step) event.PlanReplanRequestedData {
	req := event.PlanReplanRequestedData{
		Decision: d.decision(), Revision: r.Revision, Replans: r.Replans + 1, Tokens: r.Tokens,
		Goal: event.GoalSubmittedData{Goal: r.Goal, Text: r.Text}, Source: r.Source,
		Plan: event.Plan{Goal: r.Goal, Subgoals: r.Subgoals},
		Failure: event.StepFailure{Step: st.Spec.ID, Attempt: st.Attempt, Command: command(st.Spec),
			Class: st.Class, Error: st.Error, Output: st.Tail},
	}
	if st.ExitCode != nil {
		req.Failure.ExitCode = *st.ExitCode
	}
	req.Plan.Steps, req.Done = r.planInForce()
	return req
}

// planInForce is what a replan request tells the planner of r's plan: its
// steps (the compensations the run added left out) and the ids of those
// done (succeeded or skipped), which the next revision keeps.
func (r *Run) planInForce() (steps []event.Step, done []string) {
	for _, st := range r.Steps {
		if st.Compensates != nil {
			continue
		}
		steps = append(steps, st.Spec)
		if st.Status == StepSucceeded || st.Status == StepSkipped {
			done = append(done, st.Spec.ID)
		}
	}
	return steps, done
}

// command is what a step runs, for the planner: its shell command, or its
// kind and path.
func command(spec event.Step) string {
	switch spec.Kind {
	case event.KindShell, "":
		return spec.Run
	case event.KindFileWrite, event.KindFilePatch:
		return string(spec.Kind) + " " + spec.Path
	case event.KindCritique:
		return "critique of " + spec.Target + ": " + spec.Criteria
	}
	return string(spec.Kind)
}

// MaxEventBytes is the most one event's payload may carry: the protocol's
// envelope.MaxEventBytes, repeated here so that the core imports nothing
// that signs or sends (TestMaxEventBytesIsTheEnvelopes keeps them equal).
const MaxEventBytes = 640 << 10

// maxRequestBytes caps a replan request's payload: the most an event may
// carry (MaxEventBytes), less room for the redaction the outbox applies
// when it is emitted.
const maxRequestBytes = MaxEventBytes - 16<<10

// Bounds of what a replan request too large for one event keeps of its
// observations and of its failure.
const (
	maxShortReason  = 256
	maxShortFailure = 4 << 10
)

// requestReplan asks the planners for the next revision of run r
// (plan.replan_requested req, after a failure or for the next steps of
// an open plan). A request larger than one event may be is cut: the
// output tails of the results are left out, their reasons and the
// failure's error and output shortened; when the plan itself is still too
// large, the run fails with CodeBudgetExceeded saying so. (An event the
// outbox refuses would fail every decision emitted with it, at every
// Decide.)
func (d *decider) requestReplan(r *Run, req event.PlanReplanRequestedData) {
	size := requestSize(req)
	if size > maxRequestBytes {
		for i := range req.Results {
			res := &req.Results[i]
			res.OutputTail, res.Reason = "", cutEnd(res.Reason, maxShortReason)
		}
		req.Failure.Error = cutEnd(req.Failure.Error, maxShortFailure)
		req.Failure.Output = cutStart(req.Failure.Output, maxShortFailure)
		size = requestSize(req)
	}
	if size > maxRequestBytes {
		d.stopRun(r, RunFailed, CodeBudgetExceeded, fmt.Sprintf(
			"the plan (%d steps) is too large to send to the planner for revision %d: the request is %d bytes, and an event may carry %d; split the goal into smaller runs",
			len(req.Plan.Steps), req.Revision+1, size, maxRequestBytes))
		return
	}
	d.emit(replanKey(r.ID, r.Revision), event.PlanReplanRequested, r.ID, "", req)
}

// requestSize is the size of req's payload.
func requestSize(req event.PlanReplanRequestedData) int {
	b, err := json.Marshal(req)
	if err != nil {
		panic(fmt.Sprintf("orchestrator: marshal %s payload: %v", event.PlanReplanRequested, err)) // plain structs cannot fail
	}
	return len(b)
}

// cutEnd is s cut to its first n bytes (on a rune boundary), marked.
func cutEnd(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// cutStart is s cut to its last n bytes (on a rune boundary), marked.
func cutStart(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "..." + s[i:]
}
