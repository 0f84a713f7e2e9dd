package core

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	membership "github.com/agentic-dev/agentic/internal/member"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/agentic-dev/agentic/roles/policy"
)

// script interprets the golden scripts' commands against a State. Time
// starts at t0 and moves only with an @t=<duration> argument (an offset
// from t0); times print as offsets ("+1.5s").
//
// Commands (arguments in [] are optional):
//
//	plan NAME            input lines: "ID [deps=a,b] [retries=N] [backoff=D]
//	                     [idempotent] [on_failure=X] [subgoal=S] [kind=K]
//	                     [title=T] [caps=a,b] [creates=P] [check=C]
//	                     [compensate=C] [next=success:X,failure:Y]
//	                     [tests=H[:SUCCESS:FAILURE],...]
//	                     [target=T criteria=WORDS_WITH_UNDERSCORES]" or
//	                     "subgoal ID TITLE..."
//	submit RUN plan=NAME [carry[=raw|nofile]]
//	                     carry: the goal carries the plan in normal form
//	                     (GoalSubmittedData.Plan) next to a plan file;
//	                     raw: as written, not normalized; nofile: without
//	                     the file
//	propose RUN [plan=NAME] [rev=N]
//	reject RUN ERROR...
//	elect EPOCH [leader=NODE]   leader.elected; later decides use EPOCH
//	online NODE slots=N [queue=N] [caps=a,b] [inc=X]   (inc default i1)
//	node STATE NODE [inc=X] [slots=N] [caps=a,b] [roles=a,b] [epoch=N]
//	                            node.joined|suspect|failed|left, as a leader records it
//	drain NODE                  node.drain, from an operator
//	decided RUN STEP ACTION [REASON...]  step.decided, from an operator
//	members NODE=STATE[/INC[/ROLES]] ...  set the membership view ReconcileMembers
//	                            reads (STATE alive|suspect|dead|left; INC default
//	                            i1; ROLES joined by "+", default executor; slots
//	                            1); absent=DUR sets AbsentAfter
//	reconcile [epoch=N] [hold]  print ReconcileMembers' decisions; fold them
//	                            back unless hold
//	load                        State.Load: the steps each node holds
//	decide [epoch=N] [hold] [forget]  print decisions; fold them back
//	                            unless hold; forget: as a leader that lost
//	                            its in-flight marks (decisions held stay held)
//	commit [KEYPREFIX]          fold held decisions (those matching); a
//	                            decision whose id the ledger holds is
//	                            refused, as a ledger does
//	drop                        forget held decisions
//	assign RUN STEP ATTEMPT NODE [epoch=N]
//	accept RUN REV [epoch=N]
//	start RUN STEP ATTEMPT [node=N]
//	finish RUN STEP ATTEMPT STATUS [CLASS] [exit=N] [node=N] [timedout] [interrupted] [edits=P,Q] [tail=A_B] [err=TEXT...]
//	verdict RUN STEP ATTEMPT pass|fail|error [code=C] [node=N] [err=JUDGEMENT_OR_ERROR...]
//	                            critique.recorded, from a planner
//	claim RUN STEP ATTEMPT      plan.claimed of a critique attempt, from a planner
//	cancel RUN [REASON...]
//	close RUN STATUS [epoch=N] [REASON...]   run.finished, as a leader would
//	event TYPE [RUN]            an event this fold skips (memory.written, ...)
//	state RUN | runs [status=S] [limit=N] | lookup PREFIX | counters | executors
//	snapshot                    round-trip the state through a snapshot
//	nopolicy                    start again from an empty state without a
//	                            policy (scripts start with the default one)
//	policy [base=N]             policy.applied by an admin; input lines are
//	                            the YAML (base: the version in force)
//	gate RUN STEP ACTION [by=OP] [stale] [remember] [command=WORDS_WITH_UNDERSCORES] [REASON...]
//	                            gate.decided naming the step's gate subject
//	                            (stale: an older one); STEP "-" is the run's plan gate
//	pause RUN | resume RUN      run.pause, run.resume from an operator
//
// Plan steps may give run=WORDS_WITH_UNDERSCORES (underscores are spaces).
//
// A run leaves State in the fold that finishes it. The script keeps the
// final run of every run evicted (as the run index does, from the changes
// State reports), so that "state" and the event lines still show a finished
// run — marked "(out of state)" — while "runs" and "lookup" see what State
// holds: live runs only.
type script struct {
	s        *State
	l        ledger
	now      time.Time
	plans    map[string]*event.Plan
	runPlan  map[string]string
	epoch    uint64
	leader   string
	held     []Decision
	finished map[string]*Run // runs evicted from State, as they ended
	view     MemberView
	// stale keeps, per run/step, the subject of the step's gate before
	// the last one (for "gate ... stale").
	stale map[string]string
	gates map[string]string
}

func newScript() *script {
	s := policied()
	s.TrackChanges()
	return &script{s: s, now: t0, plans: map[string]*event.Plan{},
		runPlan: map[string]string{}, leader: "o1", finished: map[string]*Run{},
		stale: map[string]string{}, gates: map[string]string{}}
}

// apply folds ev and keeps the runs it evicts.
func (sc *script) apply(ev event.Event) {
	sc.s.Apply(ev)
	for _, r := range sc.s.Runs {
		for _, st := range r.Steps {
			k := r.ID + "/" + st.Spec.ID
			if st.Gate != nil && sc.gates[k] != st.Gate.Subject {
				sc.stale[k], sc.gates[k] = sc.gates[k], st.Gate.Subject
			}
		}
	}
	for _, c := range sc.s.TakeChanges().Runs {
		if c.Evicted {
			if sc.s.Runs[c.Run.ID] != nil {
				panic("evicted run " + c.Run.ID + " is still in State")
			}
			sc.finished[c.Run.ID] = c.Run
		}
	}
}

// run returns the run id from State, or the finished run; out reports the
// latter.
func (sc *script) run(id string) (r *Run, out bool) {
	if r := sc.s.Runs[id]; r != nil {
		return r, false
	}
	r = sc.finished[id]
	return r, r != nil
}

// args are a command's arguments: positional ones, key=value options and
// bare flags.
type args struct {
	pos   []string
	opt   map[string]string
	rest  string // text after err= (finish) or after the positionals (cancel, reject)
	flags map[string]bool
}

func parseArgs(fields []string) args {
	a := args{opt: map[string]string{}, flags: map[string]bool{}}
	for i, f := range fields {
		if v, ok := strings.CutPrefix(f, "err="); ok {
			a.rest = strings.Join(append([]string{v}, fields[i+1:]...), " ")
			break
		}
		if k, v, ok := strings.Cut(f, "="); ok {
			a.opt[k] = v
			continue
		}
		a.pos = append(a.pos, f)
		a.flags[f] = true
	}
	return a
}

func (a args) int(t *testing.T, i int) int {
	t.Helper()
	if i >= len(a.pos) {
		t.Fatalf("missing argument %d", i+1)
	}
	n, err := strconv.Atoi(a.pos[i])
	if err != nil {
		t.Fatalf("argument %d: %v", i+1, err)
	}
	return n
}

func (a args) optInt(t *testing.T, k string, def int) int {
	t.Helper()
	v, ok := a.opt[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, v, err)
	}
	return n
}

// exec runs one command and returns its output lines.
func (sc *script) exec(t *testing.T, line string, input []string) []string {
	t.Helper()
	fields := strings.Fields(line)
	var timeArgs []string
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "@t="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			sc.now = t0.Add(d)
			continue
		}
		timeArgs = append(timeArgs, f)
	}
	a := parseArgs(timeArgs)
	switch fields[0] {
	case "plan":
		sc.plans[a.pos[0]] = parsePlan(t, a.pos[0], input)
		return nil
	case "submit":
		name := a.opt["plan"]
		sc.runPlan[a.pos[0]] = name
		g := event.GoalSubmittedData{Goal: name}
		if how, carry := a.opt["carry"]; carry || a.flags["carry"] {
			g.Plan, g.PlanFile = sc.carried(t, line, name, how), "(the plan file)"
			if how == "nofile" {
				g.PlanFile = ""
			}
		}
		return sc.fold(event.GoalSubmitted, a.pos[0], cmp.Or(a.opt["by"], "op"), g, sc.runLine)
	case "propose":
		name := a.opt["plan"]
		if name == "" {
			name = sc.runPlan[a.pos[0]]
		}
		p := sc.plans[name]
		if p == nil {
			t.Fatalf("%q: unknown plan %q", line, name)
		}
		return sc.fold(event.PlanProposed, a.pos[0], "planner",
			event.PlanProposedData{Revision: a.optInt(t, "rev", 1), Source: "file", Plan: *p}, sc.runLine)
	case "reject":
		return sc.fold(event.PlanRejected, a.pos[0], "planner",
			event.PlanRejectedData{Error: strings.Join(a.pos[1:], " ")}, sc.runLine)
	case "elect":
		ep := uint64(a.int(t, 0))
		if l := a.opt["leader"]; l != "" {
			sc.leader = l
		}
		sc.epoch = ep
		return sc.fold(event.LeaderElected, "", sc.leader,
			event.LeaderElectedData{Decision: event.Decision{Epoch: ep}, Leader: sc.leader}, func(string) string {
				return fmt.Sprintf("epoch=%d leader=%s", sc.s.Epoch, sc.s.Leader)
			})
	case "online":
		return sc.fold(event.ExecutorOnline, "", a.pos[0], event.ExecutorOnlineData{
			Slots: a.optInt(t, "slots", 1), Queue: a.optInt(t, "queue", 0), Capabilities: list(a.opt["caps"]),
			Incarnation: cmp.Or(a.opt["inc"], "i1")}, func(string) string {
			return sc.executorLine(a.pos[0])
		})
	case "node":
		return sc.nodeEvent(t, a)
	case "drain":
		return sc.fold(event.NodeDrain, "", "op", event.NodeDrainData{Node: a.pos[0], Reason: "maintenance"}, func(string) string {
			return sc.executorLine(a.pos[0])
		})
	case "decided":
		run, step := a.pos[0], a.pos[1]
		return sc.fold(event.StepDecided, run, "op", event.StepDecidedData{
			Step: step, Action: event.StepAction(a.pos[2]), Reason: strings.Join(a.pos[3:], " ")}, sc.stepLine(step))
	case "members":
		sc.view = MemberView{}
		if v, ok := a.opt["absent"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			sc.view.AbsentAfter = t0.Add(d)
		}
		for k, v := range a.opt {
			if k == "absent" {
				continue
			}
			parts := strings.Split(v, "/")
			inc, roles := "i1", []string{event.RoleExecutor}
			if len(parts) > 1 {
				inc = parts[1]
			}
			if len(parts) > 2 {
				roles = strings.Split(parts[2], "+")
			}
			sc.view.Members = append(sc.view.Members, membership.Member{
				Meta:  membership.Meta{Node: k, Incarnation: inc, Roles: roles, Slots: 1},
				State: membership.State(parts[0]), Addr: k + ":7946"})
		}
		sort.Slice(sc.view.Members, func(i, j int) bool { return sc.view.Members[i].Node < sc.view.Members[j].Node })
		return nil
	case "reconcile":
		return sc.reconcile(t, a)
	case "load":
		load := sc.s.Load()
		var out []string
		for _, n := range slices.Sorted(maps.Keys(load)) {
			out = append(out, fmt.Sprintf("%s %d", n, load[n]))
		}
		if len(out) == 0 {
			out = []string{"none"}
		}
		return out
	case "decide":
		return sc.decide(t, a)
	case "commit":
		return sc.commit(a)
	case "drop":
		n := len(sc.held)
		sc.held = nil
		return []string{fmt.Sprintf("dropped %d", n)}
	case "assign":
		run, step := a.pos[0], a.pos[1]
		spec := event.Step{ID: step}
		if r, _ := sc.run(run); r != nil && r.Step(step) != nil {
			spec = r.Step(step).Spec
		}
		return sc.fold(event.TaskAssigned, run, sc.leader, event.TaskAssignedData{
			Decision: event.Decision{Epoch: uint64(a.optInt(t, "epoch", int(sc.epoch)))},
			Step:     spec, Attempt: a.int(t, 2), Node: a.pos[3], ReadyAt: sc.now, Policy: sc.policyRef()}, sc.stepLine(step))
	case "accept":
		return sc.fold(event.PlanAccepted, a.pos[0], sc.leader, event.PlanAcceptedData{
			Decision: event.Decision{Epoch: uint64(a.optInt(t, "epoch", int(sc.epoch)))},
			Revision: a.int(t, 1)}, sc.runLine)
	case "start":
		run, step := a.pos[0], a.pos[1]
		node := sc.nodeOf(run, step, a)
		return sc.fold(event.TaskStarted, run, node, event.TaskStartedData{
			Step: step, Attempt: a.int(t, 2), Node: node}, sc.stepLine(step))
	case "finish":
		return sc.finish(t, a)
	case "verdict":
		return sc.verdict(t, a)
	case "claim":
		return sc.claim(t, a)
	case "close":
		return sc.fold(event.RunFinished, a.pos[0], sc.leader, event.RunFinishedData{
			Decision: event.Decision{Epoch: uint64(a.optInt(t, "epoch", int(sc.epoch)))},
			Status:   event.RunStatus(a.pos[1]), Reason: strings.Join(a.pos[2:], " ")}, sc.runLine)
	case "cancel":
		return sc.fold(event.RunCancel, a.pos[0], "op",
			event.RunCancelData{Reason: strings.Join(a.pos[1:], " ")}, sc.runLine)
	case "event":
		run := ""
		if len(a.pos) > 1 {
			run = a.pos[1]
		}
		return sc.fold(event.Type(a.pos[0]), run, "x", map[string]string{"k": "v"}, func(string) string { return "ok" })
	case "state":
		return sc.stateLines(a.pos[0])
	case "runs":
		var out []string
		for _, v := range sc.s.RunsView(RunStatus(a.opt["status"]), a.optInt(t, "limit", 0)) {
			out = append(out, v.ID+" "+string(v.Status))
		}
		return out
	case "lookup":
		r, err := sc.s.Run(a.pos[0])
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return []string{r.ID}
	case "counters":
		return []string{sc.counters()}
	case "executors":
		var ids []string
		for id := range sc.s.Executors {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var out []string
		for _, id := range ids {
			out = append(out, sc.executorLine(id))
		}
		return out
	case "nopolicy":
		sc.s = NewState()
		sc.s.TrackChanges()
		return []string{"no policy"}
	case "policy":
		base := int64(0)
		if sc.s.Policy != nil {
			base = sc.s.Policy.Version
		}
		base = int64(a.optInt(t, "base", int(base)))
		text := strings.Join(input, "\n") + "\n"
		p, err := policy.Parse([]byte(text), "script")
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return sc.fold(event.PolicyApplied, "", "admin", event.PolicyAppliedData{Base: base, Name: p.Name, Hash: p.Hash(),
			Text: text, Source: event.PolicyFromApply}, func(string) string { return sc.policyLine() })
	case "gate":
		run, step := a.pos[0], a.pos[1]
		subject := "sha256:none"
		if r, _ := sc.run(run); r != nil && r.Step(step) != nil && r.Step(step).Gate != nil {
			subject = r.Step(step).Gate.Subject
		}
		if step == "-" { // the run's plan gate
			step = ""
			if r, _ := sc.run(run); r != nil && r.Gate != nil {
				subject = r.Gate.Subject
			}
		}
		if a.flags["stale"] {
			subject = sc.stale[run+"/"+step]
		}
		by := cmp.Or(a.opt["by"], "op")
		reason := []string{}
		for _, p := range a.pos[3:] {
			if p != "stale" && p != "remember" {
				reason = append(reason, p)
			}
		}
		return sc.fold(event.GateDecided, run, by, event.GateDecidedData{Step: step, Subject: subject,
			Action: event.GateAction(a.pos[2]), Command: strings.ReplaceAll(a.opt["command"], "_", " "), Remember: a.flags["remember"],
			Reason: strings.Join(reason, " ")}, func(run string) string {
			if step == "" {
				return sc.runLine(run)
			}
			return sc.stepLine(step)(run)
		})
	case "pause":
		return sc.fold(event.RunPause, a.pos[0], "op", event.RunBrakeData{Reason: strings.Join(a.pos[1:], " ")}, sc.runLine)
	case "resume":
		return sc.fold(event.RunResume, a.pos[0], "op", event.RunBrakeData{}, sc.runLine)
	case "snapshot":
		b, err := sc.s.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		s2.TrackChanges()
		sc.s = s2
		return []string{fmt.Sprintf("snapshot at seq %d", sc.s.Seq)}
	}
	t.Fatalf("unknown command %q", line)
	return nil
}

// policyRef is the policy in force, for assignments made by hand.
func (sc *script) policyRef() event.PolicyRef {
	if sc.s.Policy == nil {
		return event.PolicyRef{}
	}
	return sc.s.Policy.Ref()
}

// fold commits and applies an event and describes its effect with show
// (given the run id), followed by the counters it moved.
func (sc *script) fold(typ event.Type, run, node string, payload any, show func(string) string) []string {
	before := *sc.s
	sc.apply(sc.l.add(typ, run, node, sc.now, payload))
	return []string{show(run) + sc.moved(&before)}
}

// moved names the counters that changed since before.
func (sc *script) moved(before *State) string {
	out := ""
	if sc.s.Fenced != before.Fenced {
		out += " (fenced)"
	}
	if sc.s.Superseded != before.Superseded {
		out += " (superseded)"
	}
	if sc.s.Ignored != before.Ignored {
		out += " (ignored)"
	}
	return out
}

func (sc *script) nodeOf(run, step string, a args) string {
	if n := a.opt["node"]; n != "" {
		return n
	}
	if r, _ := sc.run(run); r != nil {
		if st := r.Step(step); st != nil {
			return st.Node
		}
	}
	return ""
}

func (sc *script) finish(t *testing.T, a args) []string {
	run, step := a.pos[0], a.pos[1]
	node := sc.nodeOf(run, step, a)
	d := event.TaskFinishedData{
		Step: step, Attempt: a.int(t, 2), Node: node, Status: event.TaskStatus(a.pos[3]),
		ExitCode: a.optInt(t, "exit", 0), Error: a.rest, TimedOut: a.flags["timedout"],
		Interrupted: a.flags["interrupted"], OutputTail: strings.ReplaceAll(a.opt["tail"], "_", " "),
	}
	if len(a.pos) > 4 && a.pos[4] != "timedout" && a.pos[4] != "interrupted" {
		d.Class = event.FailureClass(a.pos[4])
	}
	d.Edits = scriptEdits(a.opt["edits"])
	return sc.fold(event.TaskFinished, run, node, d, sc.stepLine(step))
}

// list splits a comma-separated option ("" is none).
func list(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// nodeEvent folds a membership event, as a leader would record it.
func (sc *script) nodeEvent(t *testing.T, a args) []string {
	typ := map[string]event.Type{"joined": event.NodeJoined, "suspect": event.NodeSuspect,
		"failed": event.NodeFailed, "left": event.NodeLeft}[a.pos[0]]
	if typ == "" {
		t.Fatalf("node %s: unknown state", a.pos[0])
	}
	node, roles := a.pos[1], []string{event.RoleExecutor}
	if v, ok := a.opt["roles"]; ok {
		roles = list(v)
	}
	inc := cmp.Or(a.opt["inc"], "i1")
	return sc.fold(typ, "", sc.leader, event.NodeData{
		Decision: event.Decision{Epoch: uint64(a.optInt(t, "epoch", int(sc.epoch)))},
		Node:     node, Incarnation: inc, Roles: roles, Slots: a.optInt(t, "slots", 1), Capabilities: list(a.opt["caps"]),
	}, func(string) string { return sc.nodeLine(node) })
}

// nodeLine shows a node's record and its executor.
func (sc *script) nodeLine(id string) string {
	n := sc.s.Nodes[id]
	s := id + " unrecorded"
	if n != nil {
		s = fmt.Sprintf("%s %s inc=%s changes=%d", id, n.State, n.Incarnation, n.Changes)
	}
	if sc.s.Executors[id] != nil {
		s += "; executor " + sc.executorLine(id)
	}
	return s
}

// reconcile runs ReconcileMembers over the view set by members.
func (sc *script) reconcile(t *testing.T, a args) []string {
	inflight := map[DecisionKey]bool{}
	for _, d := range sc.held {
		inflight[d.Key] = true
	}
	epoch := uint64(a.optInt(t, "epoch", int(sc.epoch)))
	ds, wake := ReconcileMembers(sc.s, sc.view, sc.now, epoch, inflight)
	var out []string
	for _, d := range ds {
		out = append(out, describeWithID(d))
		if d.Draft.ID != DecisionID(epoch, d.Key) || d.Draft.Time != sc.now {
			t.Errorf("decision %s: id %s time %v", d.Key, d.Draft.ID, d.Draft.Time)
		}
	}
	if len(ds) == 0 {
		out = append(out, "no decisions")
	}
	if !wake.IsZero() {
		out = append(out, "wake "+offset(wake))
	}
	if a.flags["hold"] {
		sc.held = append(sc.held, ds...)
		return out
	}
	for _, d := range ds {
		m := sc.commitOne(d)
		out = append(out, d.Key.String()+m+" -> "+sc.nodeLine(d.Key.Node))
	}
	return out
}

func (sc *script) decide(t *testing.T, a args) []string {
	epoch := uint64(a.optInt(t, "epoch", int(sc.epoch)))
	inflight := map[DecisionKey]bool{}
	for _, d := range sc.held {
		inflight[d.Key] = !a.flags["forget"]
	}
	ds, wake := Decide(sc.s, sc.now, epoch, inflight)
	var out []string
	for _, d := range ds {
		out = append(out, describeWithID(d))
		if d.Draft.ID != DecisionID(epoch, d.Key) {
			t.Errorf("decision %s: id %s, want DecisionID(%d, key) %s", d.Key, d.Draft.ID, epoch, DecisionID(epoch, d.Key))
		}
		if d.Draft.Time != sc.now {
			t.Errorf("decision %s: draft time %v, want now %v", d.Key, d.Draft.Time, sc.now)
		}
	}
	if len(ds) == 0 {
		out = append(out, "no decisions")
	}
	if !wake.IsZero() {
		out = append(out, "wake "+offset(wake))
	}
	if a.flags["hold"] {
		sc.held = append(sc.held, ds...)
		return out
	}
	for _, d := range ds {
		if m := sc.commitOne(d); m != " applied" {
			out = append(out, d.Key.String()+m)
		}
	}
	return out
}

// commitOne commits and folds one decision, unless the ledger holds its id
// already, and says what became of it.
func (sc *script) commitOne(d Decision) string {
	if sc.l.has(d.Draft.ID) {
		return " refused: duplicate id"
	}
	before := *sc.s
	sc.apply(sc.l.commit(d.Draft, sc.leader))
	if m := sc.moved(&before); m != "" {
		return m
	}
	return " applied"
}

func (sc *script) commit(a args) []string {
	prefix := ""
	if len(a.pos) > 0 {
		prefix = a.pos[0]
	}
	var out []string
	var keep []Decision
	for _, d := range sc.held {
		if !strings.HasPrefix(d.Key.String(), prefix) {
			keep = append(keep, d)
			continue
		}
		out = append(out, d.Key.String()+sc.commitOne(d))
	}
	sc.held = keep
	if len(out) == 0 {
		out = []string{"nothing held"}
	}
	return out
}

// describe prints a decision on one line.
func describe(d Decision) string {
	var dec event.Decision
	_ = json.Unmarshal(d.Draft.Data, &dec)
	suffix := fmt.Sprintf(" @e%d", dec.Epoch)
	switch d.Draft.Type {
	case event.PlanAccepted:
		var p event.PlanAcceptedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		return fmt.Sprintf("accept %s rev=%d", d.Draft.Run, p.Revision) + suffix
	case event.TaskAssigned:
		var p event.TaskAssignedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		if p.Node != d.Draft.Target {
			return "BAD TARGET " + d.Draft.Target
		}
		s := fmt.Sprintf("assign %s/%s#%d -> %s ready=%s", d.Draft.Run, p.Step.ID, p.Attempt, p.Node, offset(p.ReadyAt))
		if p.Reason != "" {
			s += fmt.Sprintf(" reason=%q", p.Reason)
		}
		if p.Approved != "" {
			s += " approved-by=" + strings.Join(p.Approvers, ",")
		}
		if p.Policy.Version != 1 {
			s += fmt.Sprintf(" policy=v%d", p.Policy.Version)
		}
		s += describeCompensation(p)
		return s + suffix
	case event.TaskCancel:
		var p event.TaskCancelData
		_ = json.Unmarshal(d.Draft.Data, &p)
		s := fmt.Sprintf("cancel %s/%s#%d on %s: %s", d.Draft.Run, p.Step, p.Attempt, d.Draft.Target, p.Reason)
		if p.Code == CodeSuperseded.Wire() { // the other codes are the run's, shown by its finish
			s += " [" + p.Code + "]"
		}
		return s + suffix
	case event.NodeJoined, event.NodeSuspect, event.NodeFailed, event.NodeLeft:
		var p event.NodeData
		_ = json.Unmarshal(d.Draft.Data, &p)
		s := fmt.Sprintf("%s %s inc=%s slots=%d", d.Draft.Type, p.Node, p.Incarnation, p.Slots)
		if p.Reason != "" {
			s += ": " + p.Reason
		}
		return s + suffix
	case event.PolicyApplied, event.PolicyRecorded:
		var p event.PolicyAppliedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		return fmt.Sprintf("policy base=%d name=%s source=%s", p.Base, p.Name, p.Source)
	case event.GateOpened:
		var p event.GateOpenedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		s := fmt.Sprintf("gate %s/%s#%d %s policy=v%d", d.Draft.Run, p.Step, p.Attempt, p.Kind, p.Policy.Version)
		if p.Kind == event.GatePlan {
			s = fmt.Sprintf("gate %s rev=%d %s policy=v%d", d.Draft.Run, p.Revision, p.Kind, p.Policy.Version)
		}
		if v := p.Verdict; v != nil {
			s += fmt.Sprintf(" %s %s rule=%s approvals=%d", v.Action, v.Level, v.Rule, p.Approvals)
		}
		if p.NotSubmitter {
			s += " not-submitter"
		}
		if !p.Expires.IsZero() {
			s += " expires=" + offset(p.Expires) + " then " + string(p.OnExpiry)
		}
		return s + suffix
	case event.GateClosed:
		var p event.GateClosedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		return fmt.Sprintf("close %s/%s %s [%s]: %s", d.Draft.Run, p.Step, p.Action, p.Code, p.Reason) + suffix
	case event.PlanReplanRequested:
		var p event.PlanReplanRequestedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		f := p.Failure
		return fmt.Sprintf("replan %s rev=%d replans=%d step=%s#%d exit=%d class=%s cmd=%q tail=%q done=%s steps=%d",
			d.Draft.Run, p.Revision, p.Replans, f.Step, f.Attempt, f.ExitCode, f.Class, f.Command, f.Output,
			strings.Join(p.Done, ","), len(p.Plan.Steps)) + suffix
	case event.RunFinished:
		var p event.RunFinishedData
		_ = json.Unmarshal(d.Draft.Data, &p)
		s := fmt.Sprintf("finish %s %s", d.Draft.Run, p.Status)
		if p.Code != "" {
			s += " [" + p.Code + "]"
		}
		if p.Reason != "" {
			s += ": " + p.Reason
		}
		return s + suffix
	case event.CritiqueRequested:
		return describeCritique(d) + suffix
	}
	return "unexpected " + string(d.Draft.Type)
}

// describeWithID is describe and the decision's id.
func describeWithID(d Decision) string { return describe(d) + " id=" + d.Draft.ID }

func offset(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(t0).String()
}

func (sc *script) counters() string {
	return fmt.Sprintf("fenced=%d superseded=%d ignored=%d", sc.s.Fenced, sc.s.Superseded, sc.s.Ignored)
}

func (sc *script) executorLine(id string) string {
	ex := sc.s.Executors[id]
	if ex == nil {
		return id + " unknown"
	}
	s := fmt.Sprintf("%s slots=%d free=%d", id, ex.Slots, sc.s.FreeSlots(id))
	if ex.Queue > 0 {
		s += fmt.Sprintf(" queue=%d", ex.Queue)
	}
	if len(ex.Capabilities) > 0 {
		s += " caps=" + strings.Join(ex.Capabilities, ",")
	}
	if ex.Gone != "" {
		s += " gone=" + string(ex.Gone)
	}
	if ex.Draining {
		s += " draining"
	}
	return s
}

func (sc *script) runLine(id string) string {
	r, out := sc.run(id)
	if r == nil {
		return id + " unknown"
	}
	s := fmt.Sprintf("%s %s rev=%d", r.ID, r.Status, r.Revision)
	if r.Reason != "" {
		s += fmt.Sprintf(" reason=%q", r.Reason)
	}
	if v := r.View(); v.Code != "" {
		s += " code=" + v.Code
	}
	if r.CancelRequested {
		s += " cancel-requested"
	}
	if g := r.Gate; g != nil {
		s += fmt.Sprintf(" plan-gate#%d approvals=%d/%d", g.Number, len(g.Approvers), g.Approvals)
	}
	if r.PlanApproved > 0 {
		s += fmt.Sprintf(" plan-approved=rev%d", r.PlanApproved)
	}
	if r.Replans > 0 {
		s += fmt.Sprintf(" replans=%d", r.Replans)
	}
	if rp := r.Replanning; rp != nil {
		s += fmt.Sprintf(" replanning=rev%d", rp.Revision)
		switch {
		case rp.Rejected != "":
			s += fmt.Sprintf(" rejected=%q", rp.Rejected)
		case rp.Next != nil:
			s += " proposed"
		}
	}
	if r.Wait != "" && !r.Terminal() {
		s += fmt.Sprintf(" wait=%q", r.Wait)
	}
	if out {
		s += " (out of state)"
	}
	return s
}

// stepLine returns a printer of one step of a run.
func (sc *script) stepLine(step string) func(string) string {
	return func(run string) string {
		r, _ := sc.run(run)
		if r == nil {
			return run + " unknown"
		}
		v := r.View()
		for i, sv := range v.Steps {
			if sv.ID == step {
				return run + "/" + formatStep(sv, r.Steps[i])
			}
		}
		return run + "/" + step + " unknown"
	}
}

func formatStep(v StepView, st *Step) string {
	s := v.ID
	if v.Subgoal != "" {
		s += " [" + v.Subgoal + "]"
	}
	s += " " + v.Status
	if v.Attempt > 0 {
		s += fmt.Sprintf(" attempt=%d", v.Attempt)
	}
	if v.Node != "" {
		s += " node=" + v.Node
	}
	if v.ExitCode != nil {
		s += fmt.Sprintf(" exit=%d", *v.ExitCode)
	}
	if v.Error != "" {
		s += fmt.Sprintf(" err=%q", v.Error)
	}
	if v.Code != "" {
		s += " code=" + v.Code
	}
	if st.Status == StepPending && !st.NotBefore.IsZero() {
		s += " not_before=" + offset(st.NotBefore)
	}
	if v.Reassigned > 0 {
		s += fmt.Sprintf(" reassigned=%d", v.Reassigned)
	}
	if v.Wait != "" {
		s += fmt.Sprintf(" wait=%q", v.Wait)
	}
	s += formatEvidence(v.Evidence) // branch_test.go
	if g := st.Gate; g != nil {
		s += fmt.Sprintf(" gate=%s#%d approvals=%d/%d", g.Kind, g.Number, len(g.Approvers), g.Approvals)
		if len(g.Approvers) > 0 {
			s += " by=" + strings.Join(g.Approvers, ",")
		}
	}
	if st.Approved != "" {
		s += " approved-by=" + strings.Join(st.Approvers, ",")
	}
	for _, e := range st.Edits {
		s += fmt.Sprintf(" edited(%q->%q by %s)", e.From, e.To, e.By)
	}
	return s
}

// policyLine shows the policy in force.
func (sc *script) policyLine() string {
	p := sc.s.Policy
	if p == nil {
		return "no policy"
	}
	return fmt.Sprintf("policy v%d %s source=%s", p.Version, p.Name, p.Source)
}

func (sc *script) stateLines(id string) []string {
	r, err := sc.s.Run(id)
	if f := sc.finished[id]; err != nil && f != nil {
		r, err = f, nil
	}
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	v := r.View()
	out := []string{sc.runLine(r.ID)}
	for i, sv := range v.Steps {
		line := "  " + formatStep(sv, r.Steps[i])
		if len(sv.DependsOn) > 0 {
			line += " deps=" + strings.Join(sv.DependsOn, ",")
		}
		out = append(out, line)
	}
	return out
}

// parsePlan builds a plan from the input lines of a plan command.
func parsePlan(t *testing.T, name string, lines []string) *event.Plan {
	t.Helper()
	p := &event.Plan{Goal: name}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "subgoal" {
			p.Subgoals = append(p.Subgoals, event.Subgoal{ID: f[1], Title: strings.Join(f[2:], " ")})
			continue
		}
		st := event.Step{ID: f[0], Kind: event.KindShell, Run: "echo " + f[0]}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "deps":
				st.DependsOn = strings.Split(v, ",")
			case "retries":
				st.Retries, err = strconv.Atoi(v)
			case "backoff":
				st.Backoff, err = event.ParseDuration(v)
			case "idempotent":
				st.Idempotent = true
			case "on_failure":
				st.OnFailure = event.OnFailure(v)
			case "subgoal":
				st.Subgoal = v
			case "kind":
				st.Kind = event.StepKind(v)
			case "title":
				st.Title = v
			case "caps":
				st.Capabilities = list(v)
			case "creates":
				st.Creates = v
			case "check":
				st.Check = v
			case "run":
				st.Run = strings.ReplaceAll(v, "_", " ")
			case "cwd":
				st.Cwd = v
			case "compensate":
				st.Compensate = v
			case "path":
				st.Path = v
			case "worktree":
				st.Worktree = true
			case "next", "tests": // branch_test.go
				branchOption(&st, k, v)
			case "target", "criteria":
				critiqueOption(&st, k, v)
			default:
				t.Fatalf("plan %s: unknown step option %q", name, kv)
			}
			if err != nil {
				t.Fatalf("plan %s: %s: %v", name, kv, err)
			}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// carried is plan name as a goal carries it (carry=how: "" normal form,
// "raw" as written, "nofile" normal form without its file — the caller
// clears PlanFile).
func (sc *script) carried(t *testing.T, line, name, how string) *event.Plan {
	t.Helper()
	p := sc.plans[name]
	if p == nil {
		t.Fatalf("%q: unknown plan %q", line, name)
	}
	c := *p
	c.Goal = name
	if how == "raw" {
		return &c
	}
	if err := plan.Normalize(&c); err != nil {
		t.Fatalf("%q: plan %q: %v", line, name, err)
	}
	return &c
}
