package plan

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Research in plan files (docs/memory.md, "Research and notes"): a
// research step asks questions and names the sources an executor
// fetches; a synthesise step targets it and has a model write notes.
//
//	steps:
//	  - id: read
//	    kind: research
//	    questions:
//	      - {q: Which port does the service listen on?, criteria: a number, critical: true}
//	    sources: [https://docs.example.com/ports.html]
//	  - id: notes
//	    kind: synthesise
//	    target: read
//
// Normalize makes the synthesise step depend on its target.

// questionFields are the fields of one of a research step's questions.
var questionFields = []string{"q", "criteria", "critical"}

// researchField decodes a research step's questions or sources.
func (w *walker) researchField(s *draftStep, name string, n *yaml.Node, p pos) bool {
	if name == "sources" {
		items, ok := w.list(n, p, "e.g. sources: [https://docs.example.com/page.html]")
		for j, item := range items {
			ip := at(item, p.index(j).path)
			s.field[fmt.Sprintf("sources[%d]", j)] = ip
			v, good := w.str(item, ip)
			ok = ok && good
			s.step.Sources = append(s.step.Sources, v)
		}
		return ok
	}
	items, ok := w.list(n, p, "e.g. - {q: Which port does it use?, criteria: a number, critical: true}")
	for j, item := range items {
		ip := at(item, p.index(j).path)
		s.field[fmt.Sprintf("questions[%d]", j)] = ip
		entries, good := w.mapping(item, ip, questionFields)
		if !good {
			ok = false
			continue
		}
		var q event.ResearchQuestion
		for _, e := range entries {
			fp := at(e.val, ip.child(e.name).path)
			switch e.name {
			case "q":
				q.Q, good = w.str(e.val, fp)
			case "criteria":
				q.Criteria, good = w.str(e.val, fp)
			case "critical":
				q.Critical, good = w.boolean(e.val, fp)
			}
			ok = ok && good
		}
		s.step.Questions = append(s.step.Questions, q)
	}
	return ok
}

// checkResearch reports the problems of a step's research fields: a
// research step needs questions and sources (event.CheckResearch); a
// step of another kind has neither.
func checkResearch(ps *problems, s *draftStep, kind event.StepKind) {
	st := &s.step
	if kind != event.KindResearch {
		for _, f := range []struct {
			name string
			set  bool
		}{{"questions", len(st.Questions) > 0}, {"sources", len(st.Sources) > 0}} {
			if _, written := s.field[f.name]; written || f.set {
				ps.add(s.pos(f.name), "%s step has %s; %s belongs to research steps (kind: research)", kind, f.name, f.name)
			}
		}
		return
	}
	if s.bad["questions"] || s.bad["sources"] {
		return
	}
	if err := event.CheckResearch(*st); err != nil {
		ps.add(s.pos("kind"), "%v", err)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"run", st.Run != ""}, {"check", st.Check != ""}, {"creates", st.Creates != ""}, {"target", st.Target != ""}, {"criteria", st.Criteria != ""}} {
		if f.set {
			ps.add(s.pos(f.name), "research step has %s; a research step fetches its sources: remove %s", f.name, f.name)
		}
	}
	for i, q := range st.Questions {
		checkSecret(ps, s.pos(fmt.Sprintf("questions[%d]", i)), "q", q.Q)
	}
	for i, src := range st.Sources {
		checkSecret(ps, s.pos(fmt.Sprintf("sources[%d]", i)), "sources", src)
	}
}

// checkSynthesise reports the problems of a synthesise step: it needs a
// target (a research step: critiqueDeps checks it) and has none of the
// fields of a step that runs; its criteria, optional, guide the notes.
func checkSynthesise(ps *problems, s *draftStep) {
	st := &s.step
	switch {
	case st.Target == "":
		ps.add(s.pos("target"), "synthesise step needs target: the id of the research step whose sources it reads")
	case st.Target == st.ID:
		ps.add(s.pos("target"), "synthesise step %q targets itself: name a research step", st.ID)
	}
	if len(st.Criteria) > MaxCriteriaBytes {
		ps.add(s.pos("criteria"), "criteria is %d bytes; the limit is %d", len(st.Criteria), MaxCriteriaBytes)
	}
	checkSecret(ps, s.pos("criteria"), "criteria", st.Criteria)
	for _, f := range []struct {
		name string
		set  bool
	}{{"run", st.Run != ""}, {"check", st.Check != ""}, {"creates", st.Creates != ""}, {"cwd", st.Cwd != ""}, {"env", len(st.Env) > 0}} {
		if f.set {
			ps.add(s.pos(f.name), "synthesise step has %s; a model writes its notes: remove %s", f.name, f.name)
		}
	}
}
