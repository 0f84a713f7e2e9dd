package plan

import (
	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// MaxCriteriaBytes caps a critique step's criteria: they go into a model's
// prompt with the target's output.
const MaxCriteriaBytes = 8 << 10

// A critique step (kind: critique) runs nothing: a model judges whether
// the output of the step named by target meets criteria, and the verdict
// passes or fails the critique step (its on_failure applies to a fail).
//
//	steps:
//	  - id: serve
//	    run: curl -si http://localhost:8080/
//	  - id: review
//	    kind: critique
//	    target: serve
//	    criteria: the page answers 200 and shows the site's title
//
// The critique depends on its target; Normalize adds the dependency when
// depends_on does not name it.

// critiqueField decodes the critique fields of a step (target, criteria).
func (w *walker) critiqueField(s *draftStep, name string, n *yaml.Node, p pos) (ok bool) {
	switch name {
	case "target":
		s.step.Target, ok = w.str(n, p)
	case "criteria":
		s.step.Criteria, ok = w.str(n, p)
	}
	return ok
}

// critiqueFields are the fields a critique step may not have: it runs
// nothing on an executor.
var critiqueFields = []string{"run", "check", "creates", "cwd", "env", "capabilities", "timeout", "idempotent"}

// checkCritique reports the problems of a step's critique fields: a
// critique needs a target and criteria and has none of the fields of a
// step that runs; another kind has neither target nor criteria. kind is
// the step's effective kind. Whether the target exists is the graph's
// check (critiqueDeps).
func checkCritique(ps *problems, s *draftStep, kind event.StepKind) {
	st := &s.step
	given := func(name string, set bool) bool {
		_, written := s.field[name]
		return s.ok(name) && (written || set)
	}
	if kind == event.KindSynthesise {
		checkSynthesise(ps, s)
		return
	}
	if kind != event.KindCritique {
		for _, f := range []struct{ name, v string }{{"target", st.Target}, {"criteria", st.Criteria}} {
			if given(f.name, f.v != "") {
				ps.add(s.pos(f.name), "%s step has %s; %s belongs to critique steps (kind: critique)", kind, f.name, f.name)
			}
		}
		return
	}
	switch {
	case s.blank("target", st.Target), st.Target == "" && s.ok("target"):
		ps.add(s.pos("target"), "critique step needs target: the id of the step whose output it judges")
	case st.Target == st.ID:
		ps.add(s.pos("target"), "critique step %q targets itself: name the step whose output it judges", st.ID)
	}
	switch {
	case s.blank("criteria", st.Criteria), st.Criteria == "" && s.ok("criteria"):
		ps.add(s.pos("criteria"), "critique step needs criteria: what the target's output must show to pass")
	case len(st.Criteria) > MaxCriteriaBytes:
		ps.add(s.pos("criteria"), "criteria is %d bytes; the limit is %d", len(st.Criteria), MaxCriteriaBytes)
	}
	checkSecret(ps, s.pos("criteria"), "criteria", st.Criteria)
	checkSecret(ps, s.pos("target"), "target", st.Target)
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"run", st.Run != ""}, {"check", st.Check != ""}, {"creates", st.Creates != ""}, {"cwd", st.Cwd != ""},
		{"env", len(st.Env) > 0}, {"capabilities", len(st.Capabilities) > 0}, {"timeout", st.Timeout != 0},
		{"idempotent", st.Idempotent},
	} {
		if given(f.name, f.set) {
			ps.add(s.pos(f.name), "critique step has %s; a critique runs nothing (a model judges its target's output): remove %s", f.name, f.name)
		}
	}
}

// critiqueDeps checks each critique step's target — an earlier-or-later
// step of the plan, not a critique itself — and makes the critique depend
// on it when its depends_on does not say so already.
func (g *graph) critiqueDeps() {
	for i, s := range g.d.steps {
		st := &s.step
		kind := effectiveKind(st)
		if kind != event.KindCritique && kind != event.KindSynthesise || st.Target == "" || st.Target == st.ID {
			continue
		}
		at := s.pos("target")
		j, ok := g.stepIdx[st.Target]
		if !ok {
			what := "step"
			if _, sub := g.subIdx[st.Target]; sub {
				what = "step (a critique judges one step, not a subgoal)"
			}
			g.ps.add(at, "target: unknown %s %q%s", what, st.Target, g.ps.suggest(st.Target, g.stepIDs()))
			continue
		}
		if kind == event.KindSynthesise && effectiveKind(&g.d.steps[j].step) != event.KindResearch {
			g.ps.add(at, "target %q is not a research step: a synthesise step reads the sources a research step fetched", st.Target)
			continue
		}
		if effectiveKind(&g.d.steps[j].step) == event.KindCritique {
			g.ps.add(at, "target %q is a critique step: a critique judges the output of a step that runs", st.Target)
			continue
		}
		g.add(i, j, at)
	}
}

// stepIDs are the plan's step ids, for suggestions.
func (g *graph) stepIDs() []string {
	ids := make([]string, 0, len(g.d.steps))
	for _, s := range g.d.steps {
		ids = append(ids, s.step.ID)
	}
	return ids
}
