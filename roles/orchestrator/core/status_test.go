package core

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestLifecycleTables pins the three transition tables (rewrite with
// -rewrite) and checks their shape: every status has one row, every
// successor has a row, every status is reachable from the first, every
// status not final may be cancelled, and the final statuses are the ones
// the fold and Decide treat as final.
func TestLifecycleTables(t *testing.T) {
	var b strings.Builder
	render(&b, "run", runTable)
	render(&b, "step", stepTable)
	render(&b, "task", taskTable)
	golden := filepath.Join("testdata", "lifecycle.golden")
	if *rewrite {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the lifecycle tables changed; if that is meant, rewrite %s with -rewrite and review the diff:\n%s", golden, b.String())
	}

	checkShape(t, "run", runTable, RunCancelled)
	checkShape(t, "step", stepTable, StepCancelled)
	checkShape(t, "task", taskTable, TaskCancelled)

	final := func(all []StepStatus) (out []StepStatus) {
		for _, s := range all {
			if s.Terminal() {
				out = append(out, s)
			}
		}
		return out
	}
	if got, want := final(StepStatuses()), []StepStatus{StepSucceeded, StepFailed, StepSkipped, StepCancelled, StepDenied}; !slices.Equal(got, want) {
		t.Errorf("final step statuses %v, want %v", got, want)
	}
	for _, s := range RunStatuses() {
		if want := s == RunSucceeded || s == RunFailed || s == RunCancelled; s.Terminal() != want {
			t.Errorf("run status %s: Terminal() = %v", s, s.Terminal())
		}
	}
	// The protocol's run statuses are exactly the table's, its step
	// statuses are the table's (which may hold more, for gates to come),
	// its task outcomes are the task table's final statuses.
	wire := []event.RunStatus{event.RunSubmitted, event.RunPlanning, event.RunPlanned, event.RunRunning,
		event.RunPaused, event.RunSucceeded, event.RunFailed, event.RunCancelled}
	if len(wire) != len(RunStatuses()) {
		t.Errorf("the protocol has %d run statuses, the table %d", len(wire), len(RunStatuses()))
	}
	for i, s := range RunStatuses() {
		if got, ok := runStatusFromWire(wire[i]); !ok || got != s || s.Wire() != wire[i] {
			t.Errorf("wire run status %q reads as %q %v, want %q", wire[i], got, ok, s)
		}
	}
	for _, s := range []event.StepStatus{event.StepPending, event.StepReady, event.StepAssigned, event.StepRunning,
		event.StepSucceeded, event.StepFailed, event.StepSkipped, event.StepCancelled} {
		if st := StepStatus(s); !st.Known() || st.Wire() != string(s) {
			t.Errorf("the protocol's step status %q is not in the step table", s)
		}
	}
	for _, s := range []event.TaskStatus{event.TaskSucceeded, event.TaskFailed, event.TaskSkipped, event.TaskCancelled} {
		if got, ok := taskStatusFromWire(s); !ok || !got.Terminal() {
			t.Errorf("wire task outcome %q reads as %q %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "Running", "done"} {
		if _, ok := runStatusFromWire(event.RunStatus(s)); ok {
			t.Errorf("run status %q accepted", s)
		}
		if _, ok := taskStatusFromWire(event.TaskStatus(s)); ok {
			t.Errorf("task status %q accepted", s)
		}
	}
}

func render[S status](b *strings.Builder, name string, l lifecycle[S]) {
	fmt.Fprintf(b, "%s\n", name)
	for _, row := range l {
		to := make([]string, len(row.to))
		for i, s := range row.to {
			to[i] = string(s)
		}
		if len(to) == 0 {
			to = []string{"(final)"}
		}
		fmt.Fprintf(b, "  %-15s → %s\n", row.from, strings.Join(to, " "))
	}
}

func checkShape[S status](t *testing.T, name string, l lifecycle[S], cancelled S) {
	t.Helper()
	m := l.index()
	if len(m) != len(l) {
		t.Errorf("%s table: a status has two rows", name)
	}
	reach := map[S]bool{l[0].from: true}
	for changed := true; changed; {
		changed = false
		for _, row := range l {
			for _, to := range row.to {
				if _, ok := m[to]; !ok {
					t.Errorf("%s table: %s → %s, which has no row", name, row.from, to)
				}
				if reach[row.from] && !reach[to] {
					reach[to], changed = true, true
				}
			}
		}
	}
	for _, row := range l {
		if !reach[row.from] {
			t.Errorf("%s table: %s cannot be reached from %s", name, row.from, l[0].from)
		}
		if len(row.to) > 0 && !m.allows(row.from, cancelled) {
			t.Errorf("%s table: %s is not final and cannot be cancelled", name, row.from)
		}
	}
}

// TestTheTableIsTheOnlyWriter reads the package's source: no statement
// assigns a Status field; the only places that take a Status field's address
// are setRunStatus and setStepStatus, which hand it to move, the one
// function that writes through it (after asking the table); a Run or a Step
// is built only in its first status (RunSubmitted, StepPending). Statuses
// otherwise enter a State only from a snapshot, which checks them.
func TestTheTableIsTheOnlyWriter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fn.Name.Name
			ast.Inspect(fn, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, lhs := range n.Lhs {
						if isStatus(lhs) {
							t.Errorf("%s: %s assigns a status directly; use setRunStatus or setStepStatus", fset.Position(n.Pos()), name)
						}
						if _, ok := lhs.(*ast.StarExpr); ok && name == "move" {
							seen++
						}
					}
				case *ast.UnaryExpr:
					if n.Op == token.AND && isStatus(n.X) {
						if name != "setRunStatus" && name != "setStepStatus" {
							t.Errorf("%s: %s takes the address of a status", fset.Position(n.Pos()), name)
						}
						seen++
					}
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && (id.Name == "Run" || id.Name == "Step") {
						checkFirstStatus(t, fset, name, id.Name, n)
					}
				}
				return true
			})
		}
	}
	if seen != 3 {
		t.Errorf("found %d writes through move and addresses taken in the setters, want 3: the test no longer sees the code it checks", seen)
	}
}

// isStatus reports whether e is a selector x.Status.
func isStatus(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Status"
}

func checkFirstStatus(t *testing.T, fset *token.FileSet, fn, typ string, lit *ast.CompositeLit) {
	t.Helper()
	want := map[string]string{"Run": "RunSubmitted", "Step": "StepPending"}[typ]
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			t.Errorf("%s: %s builds a %s without field names", fset.Position(lit.Pos()), fn, typ)
			return
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Status" {
			if v, ok := kv.Value.(*ast.Ident); !ok || v.Name != want {
				t.Errorf("%s: %s builds a %s in a status other than %s", fset.Position(lit.Pos()), fn, typ, want)
			}
			return
		}
	}
	t.Errorf("%s: %s builds a %s without a status", fset.Position(lit.Pos()), fn, typ)
}

// TestFoldMovesOnlyAlongTheTables: over random histories, every status
// change a fold makes, of a run or of a step, is one its table allows; a
// run starts submitted and leaves State final; a new plan's steps start
// pending (but those a replanned revision keeps done).
func TestFoldMovesOnlyAlongTheTables(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	moved := map[string]int{}
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		for range 300 {
			m.step()
		}
		s := policied()
		s.TrackChanges()
		runs := map[string]RunStatus{}
		steps := map[string][]StepStatus{}
		for _, ev := range m.l.events {
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				r := c.Run
				prev, ok := runs[r.ID]
				switch {
				case !ok && r.Status != RunSubmitted:
					t.Fatalf("seed %d seq %d: run %s starts %s", seed, ev.Seq, r.ID, r.Status)
				case ok && prev != r.Status && !prev.CanMove(r.Status):
					t.Fatalf("seed %d seq %d (%s): run %s moved %s → %s", seed, ev.Seq, ev.Type, r.ID, prev, r.Status)
				case ok && prev != r.Status:
					moved["run "+string(prev)+"→"+string(r.Status)]++
				}
				runs[r.ID] = r.Status
				if c.Plan {
					steps[r.ID] = steps[r.ID][:0]
					for _, st := range r.Steps {
						kept := ev.Type == event.PlanAccepted && (st.Status == StepSucceeded || st.Status == StepSkipped) // a replan keeps the steps done
						if st.Status != StepPending && !kept {
							t.Fatalf("seed %d seq %d: a new plan's step %s starts %s", seed, ev.Seq, st.Spec.ID, st.Status)
						}
						steps[r.ID] = append(steps[r.ID], st.Status)
					}
				}
				for _, i := range c.Steps {
					prev, cur := steps[r.ID][i], r.Steps[i].Status
					if prev != cur && !prev.CanMove(cur) {
						t.Fatalf("seed %d seq %d (%s): step %s/%s moved %s → %s", seed, ev.Seq, ev.Type, r.ID, r.Steps[i].Spec.ID, prev, cur)
					}
					if prev != cur {
						moved["step "+string(prev)+"→"+string(cur)]++
					}
					steps[r.ID][i] = cur
				}
				if c.Evicted && !r.Terminal() {
					t.Fatalf("seed %d seq %d: run %s left State %s", seed, ev.Seq, r.ID, r.Status)
				}
			}
		}
	}
	// The histories must take the moves the fold makes, or this says little
	// (with -short there are too few of them to take every move).
	if testing.Short() {
		return
	}
	for _, k := range []string{"run submitted→planned", "run planned→running", "run running→failed",
		"run running→cancelled", "run running→succeeded", "run submitted→failed",
		"step pending→assigned", "step assigned→running", "step running→succeeded", "step running→pending",
		"step running→failed", "step assigned→cancelled", "step pending→cancelled", "step running→skipped",
		"step assigned→pending", "step assigned→needs-decision", "step running→needs-decision",
		"step needs-decision→pending", "step needs-decision→skipped", "step needs-decision→cancelled"} {
		if moved[k] == 0 {
			t.Errorf("no history moved %s: %v", k, moved)
		}
	}
}

// TestStatusesMatchTheProtocol: the statuses are the protocol's
// (bus/event/status.go: what events and views carry, the one declaration
// of their values), and this package's lifecycle tables must agree with
// them: the same run statuses; every
// step status of the protocol in the step table, and the table's others
// only those that are never entered (approved, edited, denied: a step
// goes from gated back to pending); the protocol's task outcomes exactly
// the table's final task statuses. A status added to one place and not
// the other fails here.
func TestStatusesMatchTheProtocol(t *testing.T) {
	proto := protocolStatuses(t)
	var run, step, task []string
	for _, s := range RunStatuses() {
		run = append(run, string(s))
	}
	for _, s := range StepStatuses() {
		step = append(step, string(s))
	}
	for _, s := range TaskStatuses() {
		if s.Terminal() {
			task = append(task, string(s))
		}
	}
	same := func(what string, got, want []string) {
		t.Helper()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the tables have %v, the protocol %v", what, got, want)
		}
	}
	same("run statuses", run, proto["RunStatus"])
	same("task outcomes", task, proto["TaskStatus"])
	var extra []string
	for _, s := range step {
		if !slices.Contains(proto["StepStatus"], s) {
			extra = append(extra, s)
		}
	}
	same("step statuses the protocol lacks", extra, []string{"approved", "edited", "denied"})
	for _, s := range proto["StepStatus"] {
		if !slices.Contains(step, s) {
			t.Errorf("step status %q of the protocol is not in the step table", s)
		}
	}
}

// protocolStatuses reads the status constants of bus/event/status.go, by
// type name.
func protocolStatuses(t *testing.T) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "bus", "event", "status.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || len(vs.Values) != 1 {
				continue
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				out[id.Name] = append(out[id.Name], strings.Trim(lit.Value, `"`))
			}
		}
	}
	for _, k := range []string{"RunStatus", "StepStatus", "TaskStatus"} {
		if len(out[k]) == 0 {
			t.Fatalf("no %s constants found in bus/event/status.go", k)
		}
	}
	return out
}
