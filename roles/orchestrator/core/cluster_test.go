package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	membership "github.com/agentic-dev/agentic/internal/member"
)

// cluster simulates a cluster whose executors behave as executors must for
// reassignment to be safe, and whose nodes pause (kill -STOP), continue,
// die, restart and drain, seen by a gossip membership the leader records;
// it keeps the ground truth — which attempts really started on an
// executor — that the properties below are checked against.
//
// The executor contract it follows (roles/executor's): an executor runs
// the assignments its node receives, in stream order, as slots free up; a
// cancel it has received drops a queued attempt or kills a running one;
// and it starts an attempt only once its task.started is in the stream
// and it has read every cancel the stream held before it (here: reading
// its backlog and committing the start are one step). A restarted
// executor remembers what it started (its local state), reports those
// still running when it died as interrupted, and reads its assignments
// again.
type cluster struct {
	rng   *rand.Rand
	l     ledger
	s     *State
	now   time.Time
	epoch uint64
	held  []Decision
	stale []Decision
	nodes []*cnode
	plans map[string]event.Plan // run → its plan
	next  int
	check func(*State)

	// ran holds every attempt whose process started on an executor.
	ran map[attemptRef]bool
	// retried counts the operator retries the fold applied, per step.
	retried map[stepRef]int
	// succeeded counts, per step, the successes the fold applied and the
	// task.finished{succeeded} the ledger recorded.
	applied, recorded map[stepRef]int
	// seen counts what the histories reached.
	seen map[string]int
	// reused and refused count decisions with an id the ledger holds.
	reused, refused int
}

// stepRef names a step of a run.
type stepRef struct{ run, step string }

type nodeState int

const (
	nodeUp nodeState = iota
	nodePaused
	nodeDead
	nodeLeft
)

// cnode is one simulated node and its executor.
type cnode struct {
	id      string
	inc     int
	slots   int
	queue   int
	caps    []string
	state   nodeState
	member  membership.State
	drain   bool
	cursor  int    // the next ledger event its consumer reads
	fence   uint64 // the leader epoch in force at cursor
	queued  []pending
	running map[attemptRef]bool
	// local is its local state, kept across restarts: every attempt it
	// started.
	local map[attemptRef]bool
	died  []attemptRef // running when it died
}

// pending is an assignment an executor received and has not started.
type pending struct {
	ref  attemptRef
	spec event.Step
}

func newCluster(seed uint64, check func(*State)) *cluster {
	c := &cluster{rng: rand.New(rand.NewPCG(seed, seed^0x51ed270b)), s: policied(), now: t0, check: check,
		plans: map[string]event.Plan{}, ran: map[attemptRef]bool{}, retried: map[stepRef]int{},
		applied: map[stepRef]int{}, recorded: map[stepRef]int{}, seen: map[string]int{}}
	for i := range 2 + c.rng.IntN(3) {
		n := &cnode{id: fmt.Sprintf("n%d", i+1), slots: 1 + c.rng.IntN(2), queue: c.rng.IntN(3),
			running: map[attemptRef]bool{}, local: map[attemptRef]bool{}}
		if i == 0 {
			n.caps = []string{"docker", "gpu"} // every step has somewhere to go
		} else if c.rng.IntN(2) == 0 {
			n.caps = []string{"docker"}
		}
		c.nodes = append(c.nodes, n)
		c.start(n)
	}
	c.elect()
	return c
}

// add commits an event and folds it.
func (c *cluster) add(typ event.Type, run, node string, payload any) event.Event {
	ev := c.l.add(typ, run, node, c.now, payload)
	c.fold(ev)
	return ev
}

// fold applies a committed event and keeps count of what it did.
func (c *cluster) fold(ev event.Event) {
	var before StepStatus
	var ref stepRef
	switch ev.Type {
	case event.TaskFinished, event.StepDecided, event.TaskCancel:
		var d struct{ Step string }
		_ = json.Unmarshal(ev.Data, &d)
		ref = stepRef{ev.Run, d.Step}
		if _, _, st := c.s.step(ev.Run, d.Step); st != nil {
			before = st.Status
		}
	}
	sup := c.s.Superseded
	c.s.Apply(ev)
	if c.s.Superseded > sup {
		c.seen["superseded report"]++
	}
	_, _, st := c.s.step(ref.run, ref.step)
	after := StepStatus("")
	if st != nil {
		after = st.Status
	} else if before != "" {
		after = "gone" // the run ended
	}
	switch {
	case ev.Type == event.TaskFinished && before != StepSucceeded && (after == StepSucceeded || (after == "gone" && finishedOK(ev))):
		c.applied[ref]++
	case ev.Type == event.StepDecided && before == StepNeedsDecision && after == StepPending:
		c.retried[ref]++
		c.seen["operator retry"]++
	case ev.Type == event.TaskCancel && after == StepNeedsDecision && before != StepNeedsDecision:
		c.seen["needs-decision"]++
	case ev.Type == event.TaskCancel && after == StepPending && before != StepPending:
		c.seen["reassigned"]++
	}
	if ev.Type == event.TaskFinished && finishedOK(ev) {
		c.recorded[ref]++
	}
	c.check(c.s)
}

// finishedOK reports whether ev is a task.finished{succeeded}.
func finishedOK(ev event.Event) bool {
	var d event.TaskFinishedData
	return ev.Decode(&d) == nil && d.Status == event.TaskSucceeded
}

func (c *cluster) elect() {
	c.epoch++
	c.stale = append(c.stale, c.held...)
	c.held = nil
	c.add(event.LeaderElected, "", "leader", event.LeaderElectedData{Decision: event.Decision{Epoch: c.epoch}, Leader: "leader"})
}

// start (re)starts node n's executor: a new incarnation announced, the
// attempts it was running when it died reported interrupted, and its
// assignments read again.
func (c *cluster) start(n *cnode) {
	n.inc++
	n.state, n.member, n.drain = nodeUp, membership.Alive, false
	n.cursor, n.fence, n.queued = 0, 0, nil
	c.add(event.ExecutorOnline, "", n.id, event.ExecutorOnlineData{Slots: n.slots, Queue: n.queue, Capabilities: n.caps,
		Incarnation: n.incName()})
	for _, a := range n.died {
		c.add(event.TaskFinished, a.run, n.id, event.TaskFinishedData{Step: a.step, Attempt: a.attempt, Node: n.id,
			Status: event.TaskFailed, Class: event.ClassTransient, Interrupted: true, Error: InterruptedPrefix + ": restarted"})
	}
	n.died = nil
}

func (n *cnode) incName() string { return fmt.Sprintf("i%d", n.inc) }

// read is node n's consumer: the assignments, cancels and drain requests
// the stream holds for it, in order.
func (c *cluster) read(n *cnode) {
	for ; n.cursor < len(c.l.events); n.cursor++ {
		ev := c.l.events[n.cursor]
		switch ev.Type {
		case event.LeaderElected:
			var d event.LeaderElectedData
			_ = ev.Decode(&d)
			n.fence = max(n.fence, d.Epoch)
		case event.TaskAssigned:
			var d event.TaskAssignedData
			_ = ev.Decode(&d)
			a := attemptRef{ev.Run, d.Step.ID, d.Attempt}
			if d.Node == n.id && !d.FencedBy(n.fence) && !n.local[a] {
				n.queued = append(n.queued, pending{a, d.Step})
			}
		case event.TaskCancel:
			var d event.TaskCancelData
			_ = ev.Decode(&d)
			a := attemptRef{ev.Run, d.Step, d.Attempt}
			if d.Node != n.id || d.FencedBy(n.fence) {
				continue
			}
			for i, p := range n.queued {
				if p.ref == a {
					n.queued = append(n.queued[:i:i], n.queued[i+1:]...)
					break
				}
			}
			if n.running[a] {
				delete(n.running, a)
				c.add(event.TaskFinished, a.run, n.id, event.TaskFinishedData{Step: a.step, Attempt: a.attempt, Node: n.id,
					Status: event.TaskCancelled})
			}
		case event.NodeDrain:
			var d event.NodeDrainData
			_ = ev.Decode(&d)
			n.drain = n.drain || d.Node == n.id
		}
	}
}

// work is one turn of node n's executor: read, start what a free slot
// allows, finish something it runs, leave once drained.
func (c *cluster) work(n *cnode) {
	if n.state != nodeUp {
		return
	}
	c.read(n)
	for len(n.running) < n.slots && len(n.queued) > 0 {
		p := n.queued[0]
		n.queued = n.queued[1:]
		n.local[p.ref], n.running[p.ref], c.ran[p.ref] = true, true, true
		c.add(event.TaskStarted, p.ref.run, n.id, event.TaskStartedData{Step: p.ref.step, Attempt: p.ref.attempt, Node: n.id})
		c.read(n) // its own start, and whatever came with it
	}
	if len(n.running) > 0 && c.rng.IntN(2) == 0 {
		c.finish(n, c.rng.IntN(20) < 16)
	}
	if n.drain && len(n.running) == 0 && len(n.queued) == 0 {
		n.state, n.member = nodeLeft, membership.Left
		c.seen["drained and left"]++
	}
}

// finish ends one attempt node n runs: a success, or a random outcome.
func (c *cluster) finish(n *cnode, ok bool) {
	var a attemptRef
	for r := range n.running {
		if a == (attemptRef{}) || r.run < a.run || (r.run == a.run && (r.step < a.step || (r.step == a.step && r.attempt < a.attempt))) {
			a = r // the least, for a deterministic history
		}
	}
	delete(n.running, a)
	d := event.TaskFinishedData{Step: a.step, Attempt: a.attempt, Node: n.id, Status: event.TaskSucceeded}
	if !ok {
		switch c.rng.IntN(3) {
		case 0:
			d.Status, d.Class, d.ExitCode = event.TaskFailed, event.ClassLogic, 1
		case 1:
			d.Status, d.Class, d.Error = event.TaskFailed, event.ClassTransient, "timeout"
		case 2:
			d.Status = event.TaskSkipped
		}
	}
	c.add(event.TaskFinished, a.run, n.id, d)
}

// view is the gossip membership the leader reconciles with.
func (c *cluster) view() MemberView {
	v := MemberView{AbsentAfter: t0.Add(DefaultMembershipGrace)}
	for _, n := range c.nodes {
		v.Members = append(v.Members, membership.Member{Meta: membership.Meta{Node: n.id, Incarnation: n.incName(),
			Roles: []string{event.RoleExecutor}, Slots: n.slots, Capabilities: n.caps}, State: n.member})
	}
	return v
}

// decide is one leader turn: membership, then Decide; the decisions are
// held in flight.
func (c *cluster) decide() {
	inflight := map[DecisionKey]bool{}
	for _, d := range c.held {
		inflight[d.Key] = true
	}
	ds, _ := ReconcileMembers(c.s, c.view(), c.now, c.epoch, inflight)
	more, _ := Decide(c.s, c.now, c.epoch, inflight)
	for _, d := range append(ds, more...) {
		if c.l.has(d.Draft.ID) {
			c.reused++
		}
		c.held = append(c.held, d)
	}
}

// commit commits the first k decisions in flight, in order.
func (c *cluster) commit(k int) {
	for _, d := range c.held[:k] {
		c.commitDecision(d)
	}
	c.held = c.held[k:]
}

func (c *cluster) commitDecision(d Decision) {
	if c.l.has(d.Draft.ID) {
		c.refused++
		return
	}
	c.fold(c.l.commit(d.Draft, "leader"))
}

// gossip moves what the membership says one step towards the truth: a
// stopped or dead node is suspected, then declared dead; a live one is
// sometimes suspected for nothing, and refutes.
func (c *cluster) gossip() {
	for _, n := range c.nodes {
		switch {
		case (n.state == nodePaused || n.state == nodeDead) && n.member == membership.Alive && c.rng.IntN(2) == 0:
			n.member = membership.Suspect
		case (n.state == nodePaused || n.state == nodeDead) && n.member == membership.Suspect && c.rng.IntN(2) == 0:
			n.member = membership.Dead
		case n.state == nodeUp && n.member == membership.Suspect:
			n.member = membership.Alive
		case n.state == nodeUp && n.member == membership.Alive && c.rng.IntN(20) == 0:
			n.member = membership.Suspect
		}
	}
}

// chaos changes a random node: stopped, continued, killed, restarted, or
// asked to drain (never n1, which must stay to offer every capability).
func (c *cluster) chaos() {
	n := c.nodes[c.rng.IntN(len(c.nodes))]
	switch n.state {
	case nodeUp:
		switch c.rng.IntN(3) {
		case 0:
			n.state = nodePaused
			c.seen["paused"]++
		case 1:
			n.state, n.died = nodeDead, c.runningList(n)
			n.running, n.queued = map[attemptRef]bool{}, nil
			c.seen["killed"]++
		case 2:
			if n.id != "n1" {
				c.add(event.NodeDrain, "", "op", event.NodeDrainData{Node: n.id})
				c.seen["drain"]++
			}
		}
	case nodePaused:
		if c.rng.IntN(2) == 0 {
			n.state, n.member = nodeUp, membership.Alive
			c.seen["continued"]++
		} else {
			n.state, n.died = nodeDead, c.runningList(n)
			n.running, n.queued = map[attemptRef]bool{}, nil
		}
	case nodeDead:
		if n.member == membership.Dead || c.rng.IntN(3) == 0 {
			c.start(n)
			c.seen["restarted"]++
		}
	}
}

func (c *cluster) runningList(n *cnode) []attemptRef {
	var out []attemptRef
	for a := range n.running {
		out = append(out, a)
	}
	return sortRefs(out)
}

// sortRefs orders attempts, for deterministic histories.
func sortRefs(refs []attemptRef) []attemptRef {
	for i := 1; i < len(refs); i++ {
		for j := i; j > 0 && fmt.Sprint(refs[j]) < fmt.Sprint(refs[j-1]); j-- {
			refs[j], refs[j-1] = refs[j-1], refs[j]
		}
	}
	return refs
}

// operator decides on the steps held for a decision (retry, mostly), and
// sometimes on one that is not held.
func (c *cluster) operator(all bool) {
	for _, r := range c.s.activeRuns() {
		for _, st := range r.Steps {
			if st.Status != StepNeedsDecision || (!all && c.rng.IntN(2) == 0) {
				continue
			}
			action := event.StepRetry
			if !all && c.rng.IntN(4) == 0 {
				action = event.StepSkip
			}
			c.add(event.StepDecided, r.ID, "op", event.StepDecidedData{Step: st.Spec.ID, Action: action})
		}
	}
}

// submit starts a run and proposes its plan. A step that is not
// idempotent gets no retries, so that a second run of it can come only
// from an operator's retry.
func (c *cluster) submit() {
	c.next++
	id := fmt.Sprintf("run-%03d", c.next)
	var p event.Plan
	for i := range 1 + c.rng.IntN(6) {
		st := event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: "true", Idempotent: c.rng.IntN(2) == 0,
			OnFailure: []event.OnFailure{event.OnFailureAbort, event.OnFailureContinue}[c.rng.IntN(2)]}
		if st.Idempotent {
			st.Retries = c.rng.IntN(3)
		}
		if c.rng.IntN(5) == 0 {
			st.Capabilities = []string{"docker"}
		}
		for j := range i {
			if c.rng.IntN(3) == 0 {
				st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", j))
			}
		}
		p.Steps = append(p.Steps, st)
	}
	c.plans[id] = p
	c.add(event.GoalSubmitted, id, "op", event.GoalSubmittedData{Goal: id})
	c.add(event.PlanProposed, id, "planner", event.PlanProposedData{Revision: 1, Source: "file", Plan: p})
}

// step runs one random action of the chaos phase.
func (c *cluster) step() {
	switch x := c.rng.IntN(20); {
	case x == 0:
		c.submit()
	case x < 4:
		c.decide()
	case x < 7:
		c.commit(c.rng.IntN(len(c.held) + 1))
	case x < 12:
		c.work(c.nodes[c.rng.IntN(len(c.nodes))])
	case x == 12:
		c.gossip()
	case x == 13:
		c.chaos()
	case x == 14:
		c.operator(false)
	case x == 15:
		switch c.rng.IntN(3) {
		case 0:
			c.elect()
		case 1:
			if len(c.stale) > 0 {
				c.commitDecision(c.stale[0])
				c.stale = c.stale[1:]
			}
		}
	default:
		c.now = c.now.Add(time.Duration(c.rng.IntN(20000)) * time.Millisecond)
	}
}

// settle ends the chaos: every node that can come back does, executors
// succeed, the operator retries every held step, the leader decides and
// commits at once, and time passes; it returns the rounds it took for
// every run to finish, or -1.
func (c *cluster) settle(rounds int) int {
	for _, n := range c.nodes {
		switch n.state {
		case nodePaused, nodeUp:
			n.state, n.member = nodeUp, membership.Alive
		case nodeDead:
			c.start(n)
		}
	}
	c.commit(len(c.held))
	for i := range rounds {
		if len(c.s.Runs) == 0 {
			return i
		}
		c.decide()
		c.commit(len(c.held))
		for _, n := range c.nodes {
			if n.state != nodeUp {
				continue
			}
			for c.work(n); len(n.running) > 0; c.work(n) {
				c.finish(n, true)
			}
		}
		c.operator(true)
		c.now = c.now.Add(StartDeadline + time.Second)
	}
	return -1
}

// TestClusterLosesNoWorkAndRunsNothingTwice: over random histories of a
// cluster whose nodes stop, continue, die, restart and drain:
//
//   - no step that is not idempotent starts on an executor more often
//     than once plus the operator retries the fold applied to it;
//   - no step has more than one success applied, and one that is not
//     idempotent has no more successes recorded than it was allowed runs;
//   - Decide and ReconcileMembers are deterministic: the simulator's state,
//     one folded from zero and one restored from a snapshot give
//     byte-identical decisions, and no decision is made with an id the
//     ledger holds;
//   - no executor holds more than its capacity;
//   - once the nodes come back and an operator retries what is held,
//     every run finishes.
func TestClusterLosesNoWorkAndRunsNothingTwice(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	seen := map[string]int{}
	for seed := range uint64(seeds) {
		c := newCluster(seed, noOvercommit(t))
		for i := range 600 {
			c.step()
			if i%150 == 149 {
				checkPure(t, seed, c)
			}
		}
		if c.settle(500) < 0 {
			t.Fatalf("seed %d: runs still live after the cluster healed: %s", seed, liveRuns(c.s))
		}
		checkPure(t, seed, c)
		if c.reused != 0 || c.refused != 0 {
			t.Fatalf("seed %d: %d decisions with an id the ledger holds, %d refused", seed, c.reused, c.refused)
		}
		runs := map[stepRef]int{}
		for a := range c.ran {
			runs[stepRef{a.run, a.step}]++
		}
		for run, p := range c.plans {
			for _, spec := range p.Steps {
				ref := stepRef{run, spec.ID}
				allowed := 1 + c.retried[ref]
				if c.applied[ref] > 1 {
					t.Fatalf("seed %d: step %s/%s succeeded %d times", seed, run, spec.ID, c.applied[ref])
				}
				if Idempotent(spec) {
					continue
				}
				if runs[ref] > allowed || c.recorded[ref] > allowed {
					t.Fatalf("seed %d: step %s/%s is not idempotent and ran %d times (%d successes recorded), with %d operator retries",
						seed, run, spec.ID, runs[ref], c.recorded[ref], c.retried[ref])
				}
				if runs[ref] > 1 {
					seen["non-idempotent step re-run after a retry"]++
				}
			}
		}
		for k, v := range c.seen {
			seen[k] += v
		}
	}
	for _, k := range []string{"paused", "continued", "killed", "restarted", "drain", "drained and left",
		"needs-decision", "reassigned", "operator retry", "superseded report", "non-idempotent step re-run after a retry"} {
		if seen[k] == 0 {
			t.Errorf("no history reached %q: %v", k, seen)
		}
	}
	t.Logf("over %d histories: %v", seeds, seen)
}

// checkPure compares the leader's decisions over the cluster's state, one
// folded from zero and one restored from a snapshot of a random prefix.
func checkPure(t *testing.T, seed uint64, c *cluster) {
	t.Helper()
	inflight := map[DecisionKey]bool{}
	for _, d := range c.held {
		inflight[d.Key] = true
	}
	events := c.l.events
	cut := c.rng.IntN(len(events) + 1)
	restored, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:cut])))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events[cut:] {
		restored.Apply(ev)
	}
	var want []byte
	for i, s := range []*State{c.s, foldAll(events), restored} {
		ds, wake := Decide(s, c.now, c.epoch, inflight)
		nds, nwake := ReconcileMembers(s, c.view(), c.now, c.epoch, inflight)
		b, err := json.Marshal([]any{ds, wake, nds, nwake, mustSnapshot(t, s)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = b
		} else if !bytes.Equal(b, want) {
			t.Fatalf("seed %d (cut %d of %d): state %d decides otherwise:\n got %s\nwant %s", seed, cut, len(events), i, b, want)
		}
	}
}

// liveRuns describes the runs still in s, for a failure message.
func liveRuns(s *State) string {
	var b bytes.Buffer
	for _, r := range s.activeRuns() {
		fmt.Fprintf(&b, "\n%s %s:", r.ID, r.Status)
		for _, st := range r.Steps {
			fmt.Fprintf(&b, " %s=%s#%d@%s", st.Spec.ID, st.Status, st.Attempt, st.Node)
		}
	}
	for n, ex := range s.Executors {
		fmt.Fprintf(&b, "\nexecutor %s %+v", n, *ex)
	}
	return b.String()
}
