package core

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Decision is one event a leader should emit.
type Decision struct {
	// Key identifies the decision for in-flight suppression (see keys.go):
	// the leader passes the keys it emitted but has not yet folded back to
	// the next Decide, which then does not emit them again.
	Key DecisionKey
	// Draft is the event to emit: its ID is DecisionID(epoch, Key), its
	// Time is Decide's now.
	Draft event.Draft
}

// StartDeadline is how long an executor may hold an assignment it could
// have started — its node had a free slot for it by the fold's count
// (Step.SlotAt) — without reporting it started, before Decide gives the
// attempt up (task.cancel, code superseded) for another: a node whose
// consumer is stuck, or that lost the message, does not hold a step for
// ever. Time spent queued behind the executor's running steps does not
// count, and neither does time before the current leader was elected or
// the executor's incarnation came up (a restarted cluster does not expire
// every assignment at once). One value for the whole cluster: every
// leader decides by it.
const StartDeadline = 30 * time.Second

// Decide returns the decisions a leader of epoch should emit now, given the
// folded state s and the keys of decisions in flight (emitted, not yet
// folded back), and the earliest future time at which Decide should run
// again even if no event arrives (zero if none). It does not change s (but
// for its memo of the policy's verdicts, State.judge), and it is a pure
// function: the same state, now, epoch and in-flight keys give
// byte-identical decisions, ids (DecisionID) and times (now) included.
//
// A leader whose epoch is older than s.Epoch has been deposed: Decide
// returns nothing for it, since the fold would ignore its decisions anyway.
//
// Rules, per unfinished run, oldest run first:
//
//  1. cancel requested → task.cancel for each assigned/running step and
//     each assignment in flight, then run.finished{cancelled}.
//  2. planned → plan.accepted for its revision (run.finished{failed} if the
//     plan is structurally invalid).
//  3. running, with a step that ended without being done (failed for
//     good with on_failure not continue, cancelled) → task.cancel as in 1,
//     then run.finished{failed}.
//  4. running, every step final → run.finished{succeeded}.
//  5. running, a step whose attempt must be given up → task.cancel{code
//     superseded} to its node: the node failed or left (its executor is
//     gone); the node drains and the attempt waits in its queue (no
//     SlotAt); or the attempt could have started StartDeadline ago and did
//     not. The fold of that cancel makes the step pending (its next
//     attempt is assigned by rule 6, with the reason) or holds it in
//     needs-decision.
//  6. running, with a policy in force → each ready step (pending,
//     NotBefore reached, every dependency done) is judged by the policy
//     (judgeStep); an approval the state records of exactly its subject
//     (event.GateSubject with the policy in force) stands for confirm,
//     never for deny: confirm →
//     gate.opened (the fold holds the step gated until operators accept;
//     Expires from the policy's gates.timeout), deny → gate.opened with
//     the deny verdict (the fold fails the step, class policy), allow or
//     approved → task.assigned carrying the policy version (and the
//     approval) while schedulable executors (not
//     gone, draining or suspect) offering all of the step's capabilities
//     have room, counting in-flight assignments: an executor holds at
//     most Capacity (slots + queue) steps. A step goes to the executor with
//     the most free slots (slots minus the steps it holds, below zero once
//     it queues), ties broken by node id, which spreads the load; a step
//     whose last attempt was given up goes to another node than that
//     attempt's if one has room. A paused run gets neither gates nor
//     assignments, nor does a run held at its plan gate (approve_plans:
//     gate.opened kind plan first); a gate whose Expires has passed is
//     closed (gate.closed with its OnExpiry).
//
// Before the rules: while the state holds no policy, policy.applied
// (source bootstrap) with the leader's policy (DecideWith).
func Decide(s *State, now time.Time, epoch uint64, inflight map[DecisionKey]bool) ([]Decision, time.Time) {
	return DecideWith(s, now, epoch, inflight, Options{})
}

// Options are a leader's own settings that Decide reads: not ledger facts.
type Options struct {
	// Policy is the text of the policy the leader records (policy.applied,
	// source bootstrap) while the ledger holds none: its --policy file.
	// Nil means the shipped default (policy.DefaultYAML).
	Policy []byte
	// Facts resolves steps' memory references (memoryref.go); nil: a
	// step with one fails, saying the leader folds no memory.
	Facts Facts
	// Artifacts resolves steps' inputs (inputs.go); nil: a step with one
	// fails, saying the leader folds no artifacts.
	Artifacts Artifacts
}

// DecideWith is Decide with the leader's options. While the state holds
// no policy it first records opts.Policy (or the shipped default) as the
// first one, and assigns nothing until that is folded.
func DecideWith(s *State, now time.Time, epoch uint64, inflight map[DecisionKey]bool, opts Options) ([]Decision, time.Time) {
	if epoch < s.Epoch {
		return nil, time.Time{}
	}
	d := newDecider(s, now, epoch, inflight)
	d.facts = opts.Facts
	d.artifacts = opts.Artifacts
	if s.Policy == nil {
		d.bootstrap(opts.Policy)
	}
	for _, r := range s.activeRuns() {
		d.run(r)
	}
	d.prune() // prune.go
	return d.out, d.wake
}

// decider accumulates one Decide call's output.
type decider struct {
	s        *State
	now      time.Time
	epoch    uint64
	inflight map[DecisionKey]bool
	// assigning holds the attempts with an assignment in flight, and the
	// node each went to.
	assigning map[attemptRef]string
	// nodes are the schedulable executors' ids in order; load the steps
	// each holds, in-flight assignments included.
	nodes []string
	load  map[string]int
	// full is set once no schedulable executor has room: loads only grow
	// within a Decide, so no later step of it finds a node either.
	full bool
	out  []Decision
	wake time.Time
	// facts resolves memory references (memoryref.go).
	facts Facts
	// artifacts resolves inputs (inputs.go).
	artifacts Artifacts
}

// newDecider indexes the in-flight assignments and counts each executor's
// load: its assigned and running steps plus the assignments in flight to
// it.
func newDecider(s *State, now time.Time, epoch uint64, inflight map[DecisionKey]bool) *decider {
	d := &decider{s: s, now: now, epoch: epoch, inflight: inflight,
		assigning: map[attemptRef]string{}, load: map[string]int{}}
	for node, ex := range s.Executors {
		if s.schedulable(node, ex) {
			d.nodes = append(d.nodes, node)
		}
		d.load[node] = len(s.onNode[node])
	}
	sort.Strings(d.nodes)
	for key, on := range inflight {
		if !on || key.Kind != KindAssign || !d.unfolded(key.attempt()) {
			continue
		}
		d.assigning[key.attempt()] = key.Node
		d.load[key.Node]++
	}
	return d
}

// unfolded reports whether an in-flight assignment has not been folded yet:
// its step is still waiting for exactly that attempt.
func (d *decider) unfolded(ref attemptRef) bool {
	_, _, st := d.s.step(ref.run, ref.step)
	return st != nil && st.Status == StepPending && st.Attempt+1 == ref.attempt
}

// decision is what every decision of this Decide call carries: the
// leader's epoch, and the basis — the ledger position of the state it was
// decided on — so that a replay decides again on the same state
// (roles/orchestrator/replay).
func (d *decider) decision() event.Decision {
	return event.Decision{Epoch: d.epoch, Basis: d.s.Seq}
}

// emit appends a decision unless its key is in flight.
func (d *decider) emit(key DecisionKey, t event.Type, run, target string, payload any) {
	if d.inflight[key] {
		return
	}
	data, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("orchestrator: marshal %s payload: %v", t, err)) // plain structs cannot fail
	}
	d.out = append(d.out, Decision{Key: key, Draft: event.Draft{
		ID: DecisionID(d.epoch, key), Type: t, Run: run, Target: target, Time: d.now, Data: data,
	}})
}

// wakeAt lowers the wake time to t.
func (d *decider) wakeAt(t time.Time) {
	if d.wake.IsZero() || t.Before(d.wake) {
		d.wake = t
	}
}

// pickNode returns the schedulable executor that offers caps and has room
// with the most free slots (ties: lowest node id), or "" if none. It
// prefers any other to avoid (the node of an attempt just given up, which
// did not start it in time) and takes avoid only when no other will do.
func (d *decider) pickNode(caps []string, avoid string) string {
	if n := d.pick(caps, avoid); n != "" || avoid == "" {
		return n
	}
	return d.pick(caps, "")
}

// pick is pickNode without a second chance for skip.
func (d *decider) pick(caps []string, skip string) string {
	if d.full {
		return ""
	}
	best, bestFree, room := "", 0, false
	for _, n := range d.nodes {
		ex := d.s.Executors[n]
		if d.load[n] >= ex.Capacity() {
			continue
		}
		room = true
		if n == skip || !ex.Offers(caps) {
			continue
		}
		if free := ex.Slots - d.load[n]; best == "" || free > bestFree {
			best, bestFree = n, free
		}
	}
	d.full = !room
	return best
}
