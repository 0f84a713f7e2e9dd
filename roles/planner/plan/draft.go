package plan

import (
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// draft is a plan as written, before it is checked: the common form of
// every input format and of an event.Plan built in code. Checks and
// normalization work on drafts only, so a parsed file and a plan built by
// an LLM planner get exactly the same treatment.
type draft struct {
	goal string
	// goalAt locates the goal when the input wrote one.
	goalAt   *pos
	subgoals []*draftSubgoal
	steps    []*draftStep
	// hyps are the plan's hypotheses (branch.go).
	hyps []*draftHypothesis
	// git is the plan's git block (git.go), nil when it has none.
	git *gitDraft
	// family is the plan's family (facts.go).
	family string
	// root locates the plan as a whole.
	root pos
	// truncated is set when the input had more than MaxSteps steps; the
	// graph is not checked then (references to the cut steps would be
	// reported as unknown).
	truncated bool
	// stepsBad is set when a steps or subgoals list could not be decoded
	// (already reported), so that "no steps" is not reported on top.
	stepsBad bool
}

// draftSubgoal is a subgoal as written.
type draftSubgoal struct {
	id, title string
	deps      []ref
	at, idAt  pos
}

// draftStep is a step as written. step.DependsOn is unused: deps holds the
// references with their positions.
type draftStep struct {
	step event.Step
	deps []ref
	at   pos
	// field locates the fields that were given; fields missing from it are
	// located at the step itself.
	field map[string]pos
	// bad names fields whose value could not be decoded (already reported),
	// so that checks do not pile a second problem onto them.
	bad map[string]bool
}

// ref is a reference to a step or subgoal id.
type ref struct {
	id string
	at pos
}

// pos returns the position of the named field.
func (s *draftStep) pos(name string) pos {
	if p, ok := s.field[name]; ok {
		return p
	}
	return s.at.child(name)
}

// blank reports whether the named text field, with value v, was given
// (in a file: written, even as "" or null; in code: not "") but holds
// nothing but white space. Such a field is refused rather than read as
// absent, so that run: "" and run: "  " get the same answer.
func (s *draftStep) blank(name, v string) bool {
	_, written := s.field[name]
	return s.ok(name) && (written || v != "") && strings.TrimSpace(v) == ""
}

// ok reports whether the named field decoded (or was absent).
func (s *draftStep) ok(name string) bool { return !s.bad[name] }

// fromPlan builds the draft of a plan built in code. Paths name the plan's
// own fields (steps[i], subgoals[k]); there are no lines.
func fromPlan(p *event.Plan) *draft {
	d := &draft{goal: p.Goal, family: p.Family, hyps: hypothesesFromPlan(p)}
	for k, sg := range p.Subgoals {
		at := pos{path: fmt.Sprintf("subgoals[%d]", k)}
		d.subgoals = append(d.subgoals, &draftSubgoal{id: sg.ID, title: sg.Title, at: at, idAt: at.child("id")})
	}
	for i, st := range p.Steps {
		at := pos{path: fmt.Sprintf("steps[%d]", i)}
		s := &draftStep{step: st, at: at}
		s.step.DependsOn = nil
		depsAt := at.child("depends_on")
		for j, id := range st.DependsOn {
			s.deps = append(s.deps, ref{id: id, at: depsAt.index(j)})
		}
		d.steps = append(d.steps, s)
	}
	gitFromPlan(p, d)
	return d
}
