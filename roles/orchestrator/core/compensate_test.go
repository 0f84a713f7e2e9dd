package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// comp drives one run through the fold and Decide, with a scripted
// executor: every decision is committed and folded back, and outcome says
// how the executor ends each attempt it is given.
type comp struct {
	t        *testing.T
	l        ledger
	s        *State
	now      time.Time
	epoch    uint64
	assigned []event.TaskAssignedData // every task.assigned committed, in order
	// outcome ends an attempt: nil means "leave it running".
	outcome func(a event.TaskAssignedData) *event.TaskFinishedData
}

func newComp(t *testing.T, steps ...event.Step) *comp {
	c := &comp{t: t, s: NewState(), now: t0, epoch: 1}
	c.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"})
	c.add(event.ExecutorOnline, "", "n1", event.ExecutorOnlineData{Slots: 4, Incarnation: "i1"})
	c.add(event.ExecutorOnline, "", "n2", event.ExecutorOnlineData{Slots: 4, Incarnation: "i1"})
	c.add(event.GoalSubmitted, "r1", "op", event.GoalSubmittedData{Goal: "g"})
	c.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Steps: steps}})
	return c
}

func (c *comp) add(typ event.Type, run, node string, payload any) {
	c.now = c.now.Add(time.Second)
	c.s.Apply(c.l.add(typ, run, node, c.now, payload))
}

// decide runs Decide once, commits and folds every decision, and returns
// them.
func (c *comp) decide() []Decision {
	c.now = c.now.Add(time.Second)
	ds, _ := Decide(c.s, c.now, c.epoch, nil)
	for _, d := range ds {
		if c.l.has(d.Draft.ID) {
			continue // the ledger refuses a second event with an id it holds
		}
		c.s.Apply(c.l.commit(d.Draft, "o1"))
		if d.Draft.Type == event.TaskAssigned {
			var a event.TaskAssignedData
			ev := event.Event{Data: d.Draft.Data}
			if err := ev.Decode(&a); err != nil {
				c.t.Fatal(err)
			}
			c.assigned = append(c.assigned, a)
		}
	}
	return ds
}

// work has the executor start and end every attempt it holds that
// outcome ends.
func (c *comp) work() {
	r := c.s.Runs["r1"]
	if r == nil {
		return
	}
	for _, st := range append([]*Step(nil), r.Steps...) {
		if !st.Active() {
			continue
		}
		a := c.lastAssigned(st.Spec.ID, st.Attempt)
		f := c.outcome(a)
		if f == nil {
			continue
		}
		if st.Status == StepAssigned {
			c.add(event.TaskStarted, "r1", st.Node, event.TaskStartedData{Step: st.Spec.ID, Attempt: st.Attempt, Node: st.Node})
		}
		f.Step, f.Attempt, f.Node = st.Spec.ID, st.Attempt, st.Node
		c.add(event.TaskFinished, "r1", st.Node, *f)
	}
}

func (c *comp) lastAssigned(step string, attempt int) event.TaskAssignedData {
	for i := len(c.assigned) - 1; i >= 0; i-- {
		if a := c.assigned[i]; a.Step.ID == step && a.Attempt == attempt {
			return a
		}
	}
	c.t.Fatalf("no assignment of %s#%d", step, attempt)
	return event.TaskAssignedData{}
}

// drive alternates Decide and the executor until the run finishes or
// nothing moves; it returns the finished run.
func (c *comp) drive() *Run {
	var final *Run
	c.s.TrackChanges()
	for range 100 {
		r := c.s.Runs["r1"]
		c.decide()
		for _, ch := range c.s.TakeChanges().Runs {
			if ch.Evicted && ch.Run.ID == "r1" {
				final = ch.Run
			}
		}
		if final != nil {
			return final
		}
		seq := c.l.seq
		c.work()
		if c.l.seq == seq && r != nil && c.s.Runs["r1"] != nil && len(c.l.events) > 0 {
			// nothing reported: let time pass for backoffs
			c.now = c.now.Add(time.Minute)
		}
	}
	c.t.Fatalf("run did not finish; state:\n%s", dumpRun(c.s.Runs["r1"]))
	return nil
}

func dumpRun(r *Run) string {
	if r == nil {
		return "(no run)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %q\n", r.ID, r.Status, r.Reason)
	for _, st := range r.Steps {
		fmt.Fprintf(&b, "  %s %s attempt=%d node=%s err=%q\n", st.Spec.ID, st.Status, st.Attempt, st.Node, st.Error)
	}
	return b.String()
}

func write(id string, deps ...string) event.Step {
	return event.Step{ID: id, Kind: event.KindFileWrite, Path: id + ".txt", Content: id, DependsOn: deps}
}

// edits is what the executor reports for a file edit step.
func edits(step string) []event.FileEdit {
	return []event.FileEdit{{Path: "/w/" + step + ".txt", Before: event.FileAbsent, After: "sha256:" + step}}
}

// succeedAll succeeds every attempt, with edits for file edits, and fails
// the shell step named fail.
func succeedAll(fail string) func(a event.TaskAssignedData) *event.TaskFinishedData {
	return func(a event.TaskAssignedData) *event.TaskFinishedData {
		switch {
		case a.Step.ID == fail:
			return &event.TaskFinishedData{Status: event.TaskFailed, ExitCode: 1, Error: "exit code 1", Class: event.ClassLogic}
		case a.Step.Kind == event.KindFileWrite:
			return &event.TaskFinishedData{Status: event.TaskSucceeded, Edits: edits(a.Step.ID)}
		}
		return &event.TaskFinishedData{Status: event.TaskSucceeded}
	}
}

// compensations lists the compensation assignments: "id#attempt->node
// undoes step#attempt".
func (c *comp) compensations() []string {
	var out []string
	for _, a := range c.assigned {
		if a.Compensates != nil {
			out = append(out, fmt.Sprintf("%s#%d->%s(%s#%d)", a.Step.ID, a.Attempt, a.Node, a.Compensates.Step, a.Compensates.Attempt))
		}
	}
	return out
}

func TestFailedRunUndoesItsEditsInReverse(t *testing.T) {
	c := newComp(t, write("w1"), write("w2", "w1"),
		event.Step{ID: "sh", Kind: event.KindShell, Run: "mkdir d", Compensate: "rmdir d", Cwd: "/w", DependsOn: []string{"w2"}},
		write("w3", "sh"), event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w3"}})
	c.outcome = succeedAll("boom")
	r := c.drive()

	if r.Status != RunFailed || r.Code != CodeStepFailed {
		t.Fatalf("run %s %s, want failed step_failed", r.Status, r.Code)
	}
	want := []string{"w3.undo#1->n1(w3#1)", "sh.undo#1->n1(sh#1)", "w2.undo#1->n1(w2#1)", "w1.undo#1->n1(w1#1)"}
	if got := c.compensations(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("compensations %v, want %v", got, want)
	}
	if want := "step boom failed: exit code 1; compensated: w3, sh, w2, w1"; r.Reason != want {
		t.Errorf("reason %q, want %q", r.Reason, want)
	}
	for _, a := range c.assigned {
		switch {
		case a.Compensates == nil:
		case a.Step.Kind == event.KindFileRestore:
			if !a.Step.Idempotent || len(a.Compensates.Edits) != 1 || a.Compensates.Edits[0] != edits(a.Compensates.Step)[0] {
				t.Errorf("%s: %+v, want the edits of %s, idempotent", a.Step.ID, a.Compensates, a.Compensates.Step)
			}
		case a.Step.Kind == event.KindShell:
			if a.Step.Run != "rmdir d" || a.Step.Cwd != "/w" || len(a.Compensates.Edits) != 0 {
				t.Errorf("shell compensation %+v", a.Step)
			}
		default:
			t.Errorf("compensation of kind %s", a.Step.Kind)
		}
	}
	// The run shows its compensations as steps, after the plan's.
	v := r.View()
	if n := len(v.Steps); n != 9 {
		t.Fatalf("%d steps shown, want 5 planned and 4 compensations", n)
	}
	for _, sv := range v.Steps[5:] {
		if !strings.HasSuffix(sv.ID, ".undo") || sv.Status != string(event.StepSucceeded) {
			t.Errorf("compensation step %s %s", sv.ID, sv.Status)
		}
	}
}

func TestFailedCompensationDoesNotStopTheOthers(t *testing.T) {
	c := newComp(t, write("w1"), write("w2", "w1"), write("w3", "w2"),
		event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w3"}})
	base := succeedAll("boom")
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Step.ID == "w2.undo" {
			return &event.TaskFinishedData{Status: event.TaskFailed, Class: event.ClassLogic, Error: "/w/w2.txt was changed since the edit"}
		}
		return base(a)
	}
	r := c.drive()
	if r.Status != RunFailed {
		t.Fatalf("status %s", r.Status)
	}
	if got := strings.Join(c.compensations(), " "); got != "w3.undo#1->n1(w3#1) w2.undo#1->n1(w2#1) w1.undo#1->n1(w1#1)" {
		t.Fatalf("compensations %s", got)
	}
	want := "step boom failed: exit code 1; compensated: w3, w1; compensation w2.undo of step w2 failed: /w/w2.txt was changed since the edit"
	if r.Reason != want {
		t.Errorf("reason %q\nwant   %q", r.Reason, want)
	}
}

// A leader restarted from a snapshot during compensation assigns no
// compensation twice; an interrupted restore is assigned again (its next
// attempt, to the same node) and the rest follow.
func TestCompensationResumesAfterRestart(t *testing.T) {
	c := newComp(t, write("w1"), write("w2", "w1"), write("w3", "w2"),
		event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w3"}})
	base := succeedAll("boom")
	hold := true
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Compensates != nil && hold {
			return nil // the node stops here
		}
		return base(a)
	}
	for range 20 {
		c.decide()
		c.work()
		if len(c.compensations()) > 0 {
			break
		}
	}
	if got := c.compensations(); len(got) != 1 || got[0] != "w3.undo#1->n1(w3#1)" {
		t.Fatalf("before the crash: %v", got)
	}
	if got, want := c.s.Runs["r1"].View().Reason, "compensating: w3.undo undoes step w3 (assigned, node n1)"; got != want {
		t.Errorf("reason shown %q, want %q", got, want)
	}
	// The node crashes: a new leader starts from a snapshot of the state.
	s, err := UnmarshalSnapshot(mustSnapshot(t, c.s))
	if err != nil {
		t.Fatal(err)
	}
	c.s = s
	c.epoch = 2
	c.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 2}, Leader: "o1"})
	if ds := c.decide(); len(ds) != 0 {
		t.Fatalf("a restarted leader decided %v while the restore is assigned", ds)
	}
	// The executor restarts too: the attempt it held is interrupted.
	c.add(event.ExecutorOnline, "", "n1", event.ExecutorOnlineData{Slots: 4, Incarnation: "i2"})
	c.add(event.TaskFinished, "r1", "n1", event.TaskFinishedData{Step: "w3.undo", Attempt: 1, Node: "n1",
		Status: event.TaskFailed, Class: event.ClassTransient, ExitCode: -1, Interrupted: true, Error: "interrupted"})
	hold = false
	r := c.drive()
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w3, w2, w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
	want := "w3.undo#1->n1(w3#1) w3.undo#2->n1(w3#1) w2.undo#1->n1(w2#1) w1.undo#1->n1(w1#1)"
	if got := strings.Join(c.compensations(), " "); got != want {
		t.Fatalf("compensations %s\nwant         %s", got, want)
	}
}

// A leader that lost its in-flight marks decides the same compensation
// again under the same id, which the ledger refuses; and a second
// compensation of the same attempt under another id is ignored by the fold.
func TestCompensationIsNeverAssignedTwice(t *testing.T) {
	c := newComp(t, write("w1"), event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w1"}})
	c.outcome = succeedAll("boom")
	var first []Decision
	for range 20 {
		ds, _ := Decide(c.s, c.now, c.epoch, nil)
		if len(ds) == 1 && ds[0].Key.Kind == KindAssign && ds[0].Key.Step == "w1.undo" {
			first = ds
			break
		}
		c.decide()
		c.work()
	}
	if first == nil {
		t.Fatal("no compensation decided")
	}
	again, _ := Decide(c.s, c.now, c.epoch, nil)
	if len(again) != 1 || again[0].Draft.ID != first[0].Draft.ID {
		t.Fatalf("decided again %v, want the same id %s", again, first[0].Draft.ID)
	}
	c.s.Apply(c.l.commit(first[0].Draft, "o1"))
	if ds, _ := Decide(c.s, c.now, c.epoch, nil); len(ds) != 0 {
		t.Fatalf("decided %v with the compensation assigned", ds)
	}
	// Another id for the same compensated attempt is refused.
	ignored := c.s.Ignored
	c.add(event.TaskAssigned, "r1", "o1", event.TaskAssignedData{Decision: event.Decision{Epoch: 1},
		Step: event.Step{ID: "other", Kind: event.KindFileRestore}, Attempt: 1, Node: "n1",
		Compensates: &event.Compensation{Step: "w1", Attempt: 1}})
	if c.s.Ignored != ignored+1 {
		t.Fatalf("a second compensation of w1#1 was folded:\n%s", dumpRun(c.s.Runs["r1"]))
	}
	// And a compensation of a step that is itself a compensation, or of an
	// unknown step, or under a plan step's id.
	for _, bad := range []event.TaskAssignedData{
		{Step: event.Step{ID: "x", Kind: event.KindFileRestore}, Compensates: &event.Compensation{Step: "w1.undo", Attempt: 1}},
		{Step: event.Step{ID: "y", Kind: event.KindFileRestore}, Compensates: &event.Compensation{Step: "nope", Attempt: 1}},
		{Step: event.Step{ID: "boom", Kind: event.KindFileRestore}, Compensates: &event.Compensation{Step: "w1", Attempt: 2}},
		{Step: event.Step{ID: "z", Kind: event.KindFileRestore}, Attempt: 2, Compensates: &event.Compensation{Step: "w1", Attempt: 2}},
	} {
		bad.Epoch, bad.Node = 1, "n1"
		if bad.Attempt == 0 {
			bad.Attempt = 1
		}
		ignored := c.s.Ignored
		c.add(event.TaskAssigned, "r1", "o1", bad)
		if c.s.Ignored != ignored+1 {
			t.Errorf("folded %+v", bad)
		}
	}
	if n := len(c.s.Runs["r1"].Steps); n != 3 {
		t.Fatalf("%d steps, want 2 planned and 1 compensation", n)
	}
}

// The compensation of an edit goes to the node that applied it, and waits
// while that node is gone.
func TestCompensationWaitsForItsNode(t *testing.T) {
	c := newComp(t, write("w1"), event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w1"}})
	c.outcome = succeedAll("boom")
	for range 20 {
		c.decide()
		c.work()
		if st := c.s.Runs["r1"].Steps[1]; st.Terminal() {
			break
		}
	}
	if n := len(c.compensations()); n != 0 {
		t.Fatalf("%d compensations before Decide saw the failure", n)
	}
	node := c.s.Runs["r1"].Steps[0].Node
	// Before Decide sees the failure, the edit's node fails.
	c.add(event.NodeFailed, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: node, Incarnation: "i1"})
	for range 3 {
		if ds := c.decide(); len(ds) != 0 {
			t.Fatalf("decided %v while %s is gone", ds, node)
		}
	}
	c.add(event.ExecutorOnline, "", node, event.ExecutorOnlineData{Slots: 4, Incarnation: "i2"})
	r := c.drive()
	if got := c.compensations(); len(got) != 1 || got[0] != "w1.undo#1->"+node+"(w1#1)" {
		t.Fatalf("compensations %v", got)
	}
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
}

// An operator's cancel stops the running edit, waits for its end, and
// undoes it (it started: it may have changed files) and the one before.
func TestCancelledRunUndoesItsEdits(t *testing.T) {
	c := newComp(t, write("w1"), write("w2", "w1"), write("w3", "w2"))
	base := succeedAll("")
	cancelled := false
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Step.ID == "w2" {
			if !cancelled {
				return nil
			}
			return &event.TaskFinishedData{Status: event.TaskCancelled}
		}
		return base(a)
	}
	for range 20 {
		c.decide()
		c.work()
		if c.s.Runs["r1"].Steps[1].Active() {
			break
		}
	}
	c.add(event.TaskStarted, "r1", c.s.Runs["r1"].Steps[1].Node, event.TaskStartedData{Step: "w2", Attempt: 1, Node: c.s.Runs["r1"].Steps[1].Node})
	c.add(event.RunCancel, "r1", "op", event.RunCancelData{Reason: "stop"})
	ds := c.decide()
	if len(ds) != 1 || ds[0].Key.Kind != KindCancel || ds[0].Key.Step != "w2" {
		t.Fatalf("decided %v, want only the cancel of w2 (the run waits for its end)", ds)
	}
	cancelled = true
	r := c.drive()
	if r.Status != RunCancelled || r.Reason != "stop; compensated: w2, w1" {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
	for _, a := range c.assigned {
		if a.Step.ID == "w2.undo" && len(a.Compensates.Edits) != 0 {
			t.Errorf("w2 reported no edits, its compensation carries %v", a.Compensates.Edits)
		}
	}
}

// A run with nothing to undo stops as it always did: cancels and
// run.finished at once.
func TestRunWithoutUndoableStepsFinishesAtOnce(t *testing.T) {
	c := newComp(t, event.Step{ID: "a", Kind: event.KindShell, Run: "true"}, event.Step{ID: "b", Kind: event.KindShell, Run: "sleep 9"},
		event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"a"}})
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Step.ID == "b" {
			return nil
		}
		return succeedAll("boom")(a)
	}
	for range 10 {
		ds := c.decide()
		for _, d := range ds {
			if d.Key.Kind == KindFinish {
				if len(ds) != 2 || ds[0].Key.Kind != KindCancel {
					t.Fatalf("decided %v, want the cancel of b and run.finished together", ds)
				}
				return
			}
		}
		c.work()
	}
	t.Fatal("run not finished")
}

func TestUndoIDs(t *testing.T) {
	long := strings.Repeat("x", event.MaxStepIDLen)
	r := &Run{ID: "r1"}
	for _, id := range []string{"a", "a.undo", "a.undo-2", long} {
		r.Steps = append(r.Steps, &Step{Spec: event.Step{ID: id}})
	}
	r.buildIndex()
	if got := undoID(r, "a"); got != "a.undo-3" {
		t.Errorf("undoID(a) = %s, want a.undo-3", got)
	}
	got := undoID(r, long)
	if event.ValidStepID(got) != nil || !strings.HasPrefix(got, "undo-") || got != undoID(r, long) {
		t.Errorf("undoID(long) = %s", got)
	}
}

// A compensation whose node is lost while it holds it is given up: the
// restore waits for the node and runs again, as its next attempt, when the
// node's executor comes back.
func TestCompensationOnALostNodeRunsAgainWhenItReturns(t *testing.T) {
	c := newComp(t, write("w1"), event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w1"}})
	base := succeedAll("boom")
	hold := true
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Compensates != nil && hold {
			return nil
		}
		return base(a)
	}
	for range 20 {
		c.decide()
		c.work()
		if len(c.compensations()) > 0 {
			break
		}
	}
	node := c.lastAssigned("w1.undo", 1).Node
	c.add(event.NodeFailed, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: node, Incarnation: "i1"})
	ds := c.decide()
	if len(ds) != 1 || ds[0].Key.Kind != KindCancel || ds[0].Key.Step != "w1.undo" {
		t.Fatalf("decided %v, want w1.undo given up", ds)
	}
	if st := c.s.Runs["r1"].Steps[2]; st.Status != StepPending {
		t.Fatalf("w1.undo %s after its node failed, want pending", st.Status)
	}
	if ds := c.decide(); len(ds) != 0 {
		t.Fatalf("decided %v while the node is gone", ds)
	}
	c.add(event.ExecutorOnline, "", node, event.ExecutorOnlineData{Slots: 4, Incarnation: "i2"})
	hold = false
	r := c.drive()
	if got := strings.Join(c.compensations(), " "); got != "w1.undo#1->"+node+"(w1#1) w1.undo#2->"+node+"(w1#1)" {
		t.Fatalf("compensations %s", got)
	}
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
}

// A state restored from a snapshot taken at any point of a compensated
// run, and folded on from there, equals the state folded from the start,
// and decides the same: compensation survives a restart anywhere.
func TestCompensationSnapshotAnywhere(t *testing.T) {
	c := newComp(t, write("w1"), write("w2", "w1"),
		event.Step{ID: "sh", Kind: event.KindShell, Run: "true", Compensate: "undo", DependsOn: []string{"w2"}},
		event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"sh"}})
	c.outcome = succeedAll("boom")
	c.drive()
	events := c.l.events
	for k := range events {
		mid, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:k])))
		if err != nil {
			t.Fatal(err)
		}
		full := foldAll(events[:k])
		if a, b := string(mustSnapshot(t, mid)), string(mustSnapshot(t, full)); a != b {
			t.Fatalf("after %d events, the snapshot does not round-trip:\n%s\n%s", k, a, b)
		}
		if a, b := decisionsOf(mid, t0.Add(time.Hour), 1), decisionsOf(full, t0.Add(time.Hour), 1); a != b {
			t.Fatalf("after %d events: restored state decides\n%s\nthe folded one\n%s", k, a, b)
		}
		for _, ev := range events[k:] {
			mid.Apply(ev)
		}
		if a, b := string(mustSnapshot(t, mid)), string(mustSnapshot(t, foldAll(events))); a != b {
			t.Fatalf("snapshot after %d events, folded on:\n%s\nfolded from zero:\n%s", k, a, b)
		}
	}
}

// TestCompensationInMessyHistories runs the simulator's messy histories
// (late and duplicate reports, node loss, leader changes, operators) with
// runs whose plans edit files and declare compensate commands: no node is
// overcommitted, a snapshot taken anywhere folds on to the same state and
// decisions, and no attempt is ever compensated by two different steps.
func TestCompensationInMessyHistories(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	compensated, finishedAfter := 0, 0
	for seed := range uint64(seeds) {
		m := newSim(seed, noOvercommit(t))
		for i := range 300 {
			if i%60 == 0 {
				m.nextID++
				id := fmt.Sprintf("edit-%03d", m.nextID)
				m.add(event.GoalSubmitted, id, "op", event.GoalSubmittedData{Goal: id})
				m.add(event.PlanProposed, id, "planner", event.PlanProposedData{Revision: 1, Source: "file", Plan: editPlan(m)})
			}
			m.step()
		}
		events := m.l.events
		full := foldAll(events)
		want := mustSnapshot(t, full)
		rng := m.rng
		for _, k := range []int{rng.IntN(len(events) + 1), rng.IntN(len(events) + 1)} {
			s, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:k])))
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range events[k:] {
				s.Apply(ev)
			}
			if got := mustSnapshot(t, s); string(got) != string(want) {
				t.Fatalf("seed %d: snapshot at %d then the rest differs from folding from zero", seed, k)
			}
			if a, b := decisionsOf(s, m.now, m.epoch), decisionsOf(full, m.now, m.epoch); a != b {
				t.Fatalf("seed %d cut %d: decisions differ:\n%s\n%s", seed, k, a, b)
			}
		}
		// Each compensated attempt has one compensation step id, in the
		// ledger as in every state.
		ids := map[string]string{}
		tracked := NewState()
		tracked.TrackChanges()
		for _, ev := range events {
			tracked.Apply(ev)
			for _, c := range tracked.TakeChanges().Runs {
				if c.Evicted && strings.Contains(c.Run.Reason, "; compensated: ") {
					finishedAfter++
				}
			}
			if ev.Type != event.TaskAssigned {
				continue
			}
			var d event.TaskAssignedData
			if err := ev.Decode(&d); err != nil || d.Compensates == nil {
				continue
			}
			key := fmt.Sprintf("%s/%s#%d", ev.Run, d.Compensates.Step, d.Compensates.Attempt)
			if prev, ok := ids[key]; ok && prev != d.Step.ID {
				t.Fatalf("seed %d: %s compensated by %s and %s", seed, key, prev, d.Step.ID)
			}
			ids[key] = d.Step.ID
			compensated++
		}
	}
	if (compensated == 0 || finishedAfter == 0) && !testing.Short() {
		t.Fatalf("the histories reached no compensation (%d assigned, %d runs finished after compensating)", compensated, finishedAfter)
	}
	t.Logf("%d compensation assignments, %d runs finished after compensating", compensated, finishedAfter)
}

// editPlan is a random plan of file edits and shell steps, some with
// compensate, in a chain with random shortcuts.
func editPlan(m *sim) event.Plan {
	var p event.Plan
	for i := range 2 + m.rng.IntN(6) {
		st := event.Step{ID: fmt.Sprintf("e%d", i), Kind: event.KindFileWrite, Path: "f", Content: "x", Idempotent: true,
			Retries: m.rng.IntN(2)}
		if m.rng.IntN(3) == 0 {
			st = event.Step{ID: st.ID, Kind: event.KindShell, Run: "true", Retries: st.Retries}
			if m.rng.IntN(2) == 0 {
				st.Compensate = "undo"
			}
		}
		if i > 0 {
			st.DependsOn = []string{fmt.Sprintf("e%d", m.rng.IntN(i))}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// describeCompensation renders a compensation assignment for the golden
// scripts: " compensates=STEP#ATTEMPT[ edits=P,Q]".
func describeCompensation(p event.TaskAssignedData) string {
	c := p.Compensates
	if c == nil {
		return ""
	}
	s := fmt.Sprintf(" kind=%s compensates=%s#%d", p.Step.Kind, c.Step, c.Attempt)
	if p.Step.Run != "" {
		s += fmt.Sprintf(" run=%q", p.Step.Run)
	}
	var paths []string
	for _, e := range c.Edits {
		paths = append(paths, e.Path)
	}
	if len(paths) > 0 {
		s += " edits=" + strings.Join(paths, ",")
	}
	return s
}

// scriptEdits are the edits a golden script's finish reports: each path
// created (before absent).
func scriptEdits(paths string) []event.FileEdit {
	var out []event.FileEdit
	for _, p := range list(paths) {
		out = append(out, event.FileEdit{Path: p, Before: event.FileAbsent, After: "sha256:" + p})
	}
	return out
}

// A compensation its node does not start within StartDeadline (the
// assignment was lost) is given up and assigned again, to the same node.
func TestLostCompensationAssignmentIsSentAgain(t *testing.T) {
	c := newComp(t, write("w1"), event.Step{ID: "boom", Kind: event.KindShell, Run: "exit 1", DependsOn: []string{"w1"}})
	base := succeedAll("boom")
	lost := true
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Compensates != nil && lost {
			return nil
		}
		return base(a)
	}
	for range 20 {
		c.decide()
		c.work()
		if len(c.compensations()) > 0 {
			break
		}
	}
	c.now = c.now.Add(StartDeadline - 5*time.Second)
	if ds := c.decide(); len(ds) != 0 {
		t.Fatalf("decided %v before the deadline", ds)
	}
	c.now = c.now.Add(10 * time.Second)
	if ds := c.decide(); len(ds) != 1 || ds[0].Key.Kind != KindCancel || ds[0].Key.Step != "w1.undo" {
		t.Fatalf("decided %v, want the lost w1.undo given up", ds)
	}
	lost = false
	r := c.drive()
	node := c.lastAssigned("w1.undo", 1).Node
	if got := strings.Join(c.compensations(), " "); got != "w1.undo#1->"+node+"(w1#1) w1.undo#2->"+node+"(w1#1)" {
		t.Fatalf("compensations %s", got)
	}
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
}
