package core

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	membership "github.com/agentic-dev/agentic/internal/member"
	"github.com/agentic-dev/agentic/roles/policy"
)

// sim generates plausible, messy event histories: a leader that decides
// with in-flight suppression, executors that report (sometimes late,
// twice, or about superseded attempts), operators that cancel, drain
// nodes and decide on held steps, a gossip membership in which nodes are
// suspected, fail, leave and come back (sometimes restarted), and leader
// changes that leave a deposed leader's decisions to be fenced.
type sim struct {
	rng    *rand.Rand
	l      ledger
	s      *State
	now    time.Time
	epoch  uint64
	held   []Decision // the current leader's decisions in flight
	stale  []Decision // a deposed leader's decisions, committed late
	nodes  []string
	nextID int
	// members is the gossip view the leader reconciles with; online the
	// executor.online each node announced last.
	members map[string]membership.Member
	online  map[string]event.ExecutorOnlineData
	// reused counts decisions Decide made with an id the ledger already
	// holds; refused counts commits of such ids, which a ledger refuses.
	reused, refused int
	// check is called after every fold.
	check func(*State)
	// critiques makes some plan steps critique steps (critique_test.go).
	critiques bool
}

func newSim(seed uint64, check func(*State)) *sim {
	m := &sim{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), s: policied(), now: t0, check: check,
		members: map[string]membership.Member{}, online: map[string]event.ExecutorOnlineData{}}
	for i := range 1 + m.rng.IntN(3) {
		n := fmt.Sprintf("n%d", i+1)
		m.nodes = append(m.nodes, n)
		d := event.ExecutorOnlineData{Slots: 1 + m.rng.IntN(3), Queue: m.rng.IntN(3), Capabilities: m.someCaps(), Incarnation: "i1"}
		m.online[n] = d
		m.members[n] = membership.Member{Meta: membership.Meta{Node: n, Incarnation: "i1", Roles: []string{event.RoleExecutor},
			Slots: d.Slots, Capabilities: d.Capabilities}, State: membership.Alive}
		m.add(event.ExecutorOnline, "", n, d)
	}
	m.elect()
	return m
}

// someCaps is a random subset of the capabilities the simulator knows.
func (m *sim) someCaps() []string {
	var caps []string
	for _, c := range []string{"docker", "gpu"} {
		if m.rng.IntN(2) == 0 {
			caps = append(caps, c)
		}
	}
	return caps
}

// propose records what the leader decided as in flight.
func (m *sim) propose(ds []Decision) {
	for _, d := range ds {
		if m.l.has(d.Draft.ID) {
			m.reused++
		}
	}
	m.held = append(m.held, ds...)
}

// inflight is the keys of the leader's decisions in flight.
func (m *sim) inflight() map[DecisionKey]bool {
	inflight := map[DecisionKey]bool{}
	for _, d := range m.held {
		inflight[d.Key] = true
	}
	return inflight
}

// view is the membership view the leader reconciles with.
func (m *sim) view() MemberView {
	v := MemberView{AbsentAfter: t0.Add(DefaultMembershipGrace)}
	for _, n := range m.nodes {
		v.Members = append(v.Members, m.members[n])
	}
	return v
}

// gossip changes what the membership says of a random node: suspected,
// dead, departed, alive again, or restarted (a new incarnation, which its
// executor may announce first); then the leader reconciles.
func (m *sim) gossip() {
	n := m.nodes[m.rng.IntN(len(m.nodes))]
	mb := m.members[n]
	mb.State = []membership.State{membership.Alive, membership.Suspect, membership.Dead, membership.Left}[m.rng.IntN(4)]
	if m.rng.IntN(4) == 0 {
		mb.State = membership.Alive
		mb.Incarnation = fmt.Sprintf("i%d", m.rng.IntN(1000))
		if m.rng.IntN(2) == 0 {
			d := m.online[n]
			d.Incarnation = mb.Incarnation
			m.online[n] = d
			m.add(event.ExecutorOnline, "", n, d)
		}
	}
	m.members[n] = mb
	ds, _ := ReconcileMembers(m.s, m.view(), m.now, m.epoch, m.inflight())
	m.propose(ds)
}

// operator drains a node, answers a gate, pauses or resumes a run, or
// decides on a step (most often one held for a decision).
func (m *sim) operator() {
	switch m.rng.IntN(10) {
	case 0:
		m.add(event.NodeDrain, "", "op", event.NodeDrainData{Node: m.nodes[m.rng.IntN(len(m.nodes))]})
		return
	case 4:
		m.applyPolicy()
		return
	case 1, 2:
		m.answerGate()
		return
	case 3:
		if r, _ := m.pickStep(false); r != nil {
			typ := event.RunPause
			if r.Status == RunPaused || m.rng.IntN(3) == 0 {
				typ = event.RunResume
			}
			m.add(typ, r.ID, "op", event.RunBrakeData{})
		}
		return
	}
	r, st := m.pickStep(false)
	for _, run := range m.s.activeRuns() {
		for _, s := range run.Steps {
			if s.Status == StepNeedsDecision && m.rng.IntN(2) == 0 {
				r, st = run, s
			}
		}
	}
	if st == nil {
		return
	}
	action := []event.StepAction{event.StepRetry, event.StepSkip, "redo"}[m.rng.IntN(3)]
	m.add(event.StepDecided, r.ID, "op", event.StepDecidedData{Step: st.Spec.ID, Action: action})
}

// answerGate answers a random open gate: accept (sometimes from the
// submitter, or naming a stale subject), edit, skip or deny.
func (m *sim) answerGate() {
	type held struct {
		r  *Run
		st *Step
	}
	var open []held
	for _, r := range m.s.activeRuns() {
		for _, st := range r.Steps {
			if st.Gate != nil {
				open = append(open, held{r, st})
			}
		}
	}
	if len(open) == 0 {
		return
	}
	h := open[m.rng.IntN(len(open))]
	d := event.GateDecidedData{Step: h.st.Spec.ID, Subject: h.st.Gate.Subject, Action: event.GateAccept}
	if m.rng.IntN(5) == 0 {
		d.Subject = "sha256:stale"
	}
	switch m.rng.IntN(6) {
	case 0:
		d.Action, d.Command = event.GateEdit, []string{"true", "rm -rf build2"}[m.rng.IntN(2)]
	case 1:
		d.Action = event.GateSkip
	case 2:
		d.Action = event.GateDeny
	}
	m.add(event.GateDecided, h.r.ID, []string{"op", "op2", "op3"}[m.rng.IntN(3)], d)
}

// gateInvariant: no assignment is folded that the policy in force would
// not allow, unless the step records an approval of exactly its subject;
// none of a step the policy denies. (Steps assigned before a policy
// change keep running: the check is made as each assignment is folded.)
func (m *sim) gateInvariant(ev event.Event) {
	if m.s.Policy == nil || ev.Type != event.TaskAssigned {
		return
	}
	var d event.TaskAssignedData
	if err := ev.Decode(&d); err != nil {
		panic(err)
	}
	_, _, st := m.s.step(ev.Run, d.Step.ID)
	if st == nil || st.Status != StepAssigned || st.Attempt != d.Attempt || st.AssignedSeq != ev.Seq {
		return // not applied
	}
	v := judgeStep(m.s.Policy.parsed, st.Spec)
	approved := st.Approved == event.GateSubject(st.Spec, m.s.Policy.Ref())
	if v.Action == policy.Deny || (v.Action != policy.Allow && !approved) {
		panic(fmt.Sprintf("seq %d: step %s/%s (%q, %s) assigned without an approval", m.s.Seq, ev.Run, st.Spec.ID, st.Spec.Run, v.Action))
	}
}

// policies the simulated administrator applies in turn: the shipped
// default, one that asks two approvers and denies curl, and one that
// approves whole plans.
var simPolicies = [][]byte{
	policy.DefaultYAML(),
	[]byte("name: strict\napprovals:\n  high: {approvers: 2, not_submitter: true}\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n  - pattern: curl\n    action: deny\n"),
	[]byte("name: plans\napprove_plans: by-level\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n"),
}

// applyPolicy applies one of simPolicies as an administrator would
// (sometimes on a stale base, which the fold ignores).
func (m *sim) applyPolicy() {
	text := simPolicies[m.rng.IntN(len(simPolicies))]
	p, err := policy.Parse(text, "sim")
	if err != nil {
		panic(err)
	}
	base := int64(0)
	if m.s.Policy != nil {
		base = m.s.Policy.Version
	}
	if m.rng.IntN(5) == 0 {
		base--
	}
	m.add(event.PolicyApplied, "", "admin", event.PolicyAppliedData{Base: base, Name: p.Name, Hash: p.Hash(), Text: string(text), Source: event.PolicyFromApply})
}

func (m *sim) add(typ event.Type, run, node string, payload any) {
	ev := m.l.add(typ, run, node, m.now, payload)
	m.s.Apply(ev)
	m.check(m.s)
	m.gateInvariant(ev)
}

func (m *sim) commitDecision(d Decision) {
	if m.l.has(d.Draft.ID) {
		m.refused++ // a ledger refuses a repeated event id
		return
	}
	ev := m.l.commit(d.Draft, "leader")
	m.s.Apply(ev)
	m.check(m.s)
	m.gateInvariant(ev)
}

func (m *sim) elect() {
	m.epoch++
	m.stale = append(m.stale, m.held...)
	m.held = nil
	m.add(event.LeaderElected, "", "leader", event.LeaderElectedData{Decision: event.Decision{Epoch: m.epoch}, Leader: "leader"})
}

// step runs one random action.
func (m *sim) step() {
	switch m.rng.IntN(16) {
	case 0:
		m.submit()
	case 1, 2, 3:
		ds, _ := Decide(m.s, m.now, m.epoch, m.inflight())
		m.propose(ds)
	case 14:
		m.gossip()
	case 15:
		m.operator()
	case 4, 5:
		k := m.rng.IntN(len(m.held) + 1)
		for _, d := range m.held[:k] {
			m.commitDecision(d)
		}
		m.held = m.held[k:]
	case 6, 7:
		if r, st := m.pickStep(true); st != nil {
			m.add(event.TaskStarted, r.ID, st.Node, event.TaskStartedData{Step: st.Spec.ID, Attempt: st.Attempt, Node: st.Node})
		}
	case 8, 9, 10:
		if r, st := m.pickStep(true); st != nil {
			m.finish(r, st, st.Attempt, st.Node)
		}
	case 11:
		// A late, duplicate or misdirected report.
		if r, st := m.pickStep(false); st != nil && st.Attempt > 0 {
			m.finish(r, st, st.Attempt-m.rng.IntN(2), m.nodes[m.rng.IntN(len(m.nodes))])
		}
	case 12:
		switch m.rng.IntN(4) {
		case 0:
			m.elect()
		case 1:
			if len(m.stale) > 0 {
				m.commitDecision(m.stale[0])
				m.stale = m.stale[1:]
			}
		case 2:
			if r, _ := m.pickStep(false); r != nil {
				m.add(event.RunCancel, r.ID, "op", event.RunCancelData{Reason: "enough"})
			}
		case 3:
			m.add(event.Type("memory.written"), "", "mem", map[string]string{"k": "v"})
		}
	case 13:
		m.replan()
		m.now = m.now.Add(time.Duration(m.rng.IntN(3000)) * time.Millisecond)
	}
}

// replan answers some of the replans asked for, as a planner would: the
// next revision (the plan in force with a changed step, or a new random
// plan), sometimes a wrong revision, or a rejection.
func (m *sim) replan() {
	for _, r := range m.s.activeRuns() {
		rp := r.Replanning
		if rp == nil || rp.Next != nil || rp.Rejected != "" || m.rng.IntN(3) != 0 {
			continue
		}
		switch x := m.rng.IntN(10); {
		case x == 0:
			m.add(event.PlanRejected, r.ID, "planner", event.PlanRejectedData{Error: "cannot"})
		case x == 1:
			m.add(event.PlanProposed, r.ID, "planner", event.PlanProposedData{Revision: rp.Revision + 1, Source: "llm", Plan: m.randomPlan()})
		case x < 5:
			m.add(event.PlanProposed, r.ID, "planner", event.PlanProposedData{Revision: rp.Revision, Source: "llm", Plan: m.randomPlan()})
		default:
			var p event.Plan
			for _, st := range r.Steps {
				if st.Compensates == nil {
					p.Steps = append(p.Steps, st.Spec)
				}
			}
			if len(p.Steps) > 0 {
				i := m.rng.IntN(len(p.Steps))
				p.Steps[i].Run += " --fixed"
			}
			m.add(event.PlanProposed, r.ID, "planner", event.PlanProposedData{Revision: rp.Revision, Source: "llm", Plan: p})
		}
	}
}

// submit starts a run with a random plan, usually proposes it (sometimes
// twice), and sometimes rejects it.
func (m *sim) submit() {
	m.nextID++
	id := fmt.Sprintf("run-%03d", m.nextID)
	m.add(event.GoalSubmitted, id, "op", event.GoalSubmittedData{Goal: id})
	switch m.rng.IntN(10) {
	case 0:
		m.add(event.PlanRejected, id, "planner", event.PlanRejectedData{Error: "no"})
		return
	case 1:
		return
	}
	for rev := 1; rev <= 1+m.rng.IntN(2); rev++ {
		m.add(event.PlanProposed, id, "planner", event.PlanProposedData{Revision: rev, Source: "file", Plan: m.randomPlan()})
	}
}

func (m *sim) randomPlan() event.Plan {
	var p event.Plan
	failures := []event.OnFailure{"", event.OnFailureAbort, event.OnFailureContinue, event.OnFailureRetry, event.OnFailureReplan}
	for i := range 1 + m.rng.IntN(10) {
		st := event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: "true",
			Retries: m.rng.IntN(3), Idempotent: m.rng.IntN(2) == 0,
			OnFailure: failures[m.rng.IntN(len(failures))], Subgoal: fmt.Sprintf("g%d", m.rng.IntN(2))}
		switch m.rng.IntN(10) {
		case 0:
			st.Kind, st.Run = event.KindNoop, ""
		case 1:
			st.Creates = "/tmp/x"
		case 2:
			st.Capabilities = m.someCaps()
		case 3:
			st.Run = "rm -rf build" // gated by the default policy
		case 4:
			st.Run = "curl -fsS https://example.com" // denied by one of simPolicies
		case 5:
			if m.critiques {
				critiqueStep(&st, i)
			}
		}
		if m.rng.IntN(2) == 0 {
			st.Backoff = event.Duration(500 * time.Millisecond)
		}
		for j := range i {
			if m.rng.IntN(3) == 0 {
				st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", j))
			}
		}
		if m.rng.IntN(50) == 0 {
			st.DependsOn = append(st.DependsOn, "nowhere")
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// pickStep picks a random step of an unfinished run, an active one if
// active is set.
func (m *sim) pickStep(active bool) (*Run, *Step) {
	var runs []*Run
	for _, r := range m.s.activeRuns() {
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	r := runs[m.rng.IntN(len(runs))]
	var steps []*Step
	for _, st := range r.Steps {
		if !active || st.Active() {
			steps = append(steps, st)
		}
	}
	if len(steps) == 0 {
		return r, nil
	}
	return r, steps[m.rng.IntN(len(steps))]
}

func (m *sim) finish(r *Run, st *Step, attempt int, node string) {
	if isCritique(st) && m.rng.IntN(4) != 0 {
		m.verdict(r, st, attempt)
		return
	}
	d := event.TaskFinishedData{Step: st.Spec.ID, Attempt: attempt, Node: node, Status: event.TaskSucceeded}
	switch x := m.rng.IntN(20); {
	case x < 3:
		d.Status, d.Class, d.Error = event.TaskFailed, event.ClassTransient, "timeout"
	case x < 6:
		d.Status, d.Class, d.ExitCode = event.TaskFailed, event.ClassLogic, 1
	case x < 7:
		d.Status, d.Class, d.Error = event.TaskFailed, event.ClassPolicy, "denied"
	case x < 8:
		d.Status, d.Class, d.Error, d.Interrupted = event.TaskFailed, event.ClassTransient, InterruptedPrefix+": restart", true
	case x < 9:
		d.Status = event.TaskSkipped
	case x < 10:
		d.Status = event.TaskCancelled
	}
	m.add(event.TaskFinished, r.ID, node, d)
}
