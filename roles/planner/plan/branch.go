package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Branches and hypotheses (protocol version 6): the authoring side of a
// debugging playbook.
//
//	hypotheses:
//	  - id: cache
//	    statement: the build cache is stale
//	steps:
//	  - id: reproduce
//	    run: make test
//	    next:
//	      - {on: success, to: done}
//	      - {on: failure, to: clean}
//	  - id: clean
//	    run: make clean test
//	    tests: [cache]            # success supports, failure refutes
//	  - id: done
//	    kind: noop
//
// A branch's target runs only if the branch is taken. Normalization makes
// each target depend on the step that branches to it, so it comes later in
// the step order whatever order the file gives; a target that the
// branching step itself waits for (directly or not) is a cycle, reported
// at the branch. These are refused as ambiguous: two branches on one
// outcome, both outcomes to one target, a step that is the target of
// branches of two steps (whether it runs would depend on both: give each
// branch its own target and join them with a step that depends on both),
// and a failure branch together with on_failure: replan (both would route
// the failure).
//
// tests names hypotheses: the short form [cache] means success supports
// and failure refutes; the long form {hypothesis: cache, success: none,
// failure: supports} says otherwise. Normalization drops the values equal
// to those defaults.

// Fields of a branch, a hypothesis test and a hypothesis.
var (
	branchFields     = []string{"on", "to"}
	testFields       = []string{"hypothesis", "success", "failure"}
	hypothesisFields = []string{"id", "statement"}
	branchOns        = []string{string(event.BranchOnSuccess), string(event.BranchOnFailure)}
	evidences        = []string{string(event.EvidenceSupports), string(event.EvidenceRefutes), string(event.EvidenceNone)}
)

// MaxHypotheses caps the hypotheses of one plan.
const MaxHypotheses = 100

// draftHypothesis is a plan hypothesis as written.
type draftHypothesis struct {
	h                 event.Hypothesis
	at, idAt, stateAt pos
	statementGiven    bool
}

// next decodes a step's branches: a list of {on, to}.
func (w *walker) next(s *draftStep, n *yaml.Node, p pos) bool {
	items, ok := w.list(n, p, "e.g. - {on: failure, to: diagnose}")
	if !ok {
		return false
	}
	for j, item := range items {
		ip := at(item, p.index(j).path)
		entries, good := w.mapping(item, ip, branchFields)
		if !good {
			ok = false
			continue
		}
		key := fmt.Sprintf("next[%d]", j)
		s.field[key] = ip
		var b event.Branch
		ok = w.strFields(s, key, ip, entries, func(name, v string) {
			switch name {
			case "on":
				b.On = event.BranchOn(v)
			case "to":
				b.To = v
			}
		}) && ok
		s.step.Next = append(s.step.Next, b)
	}
	return ok
}

// tests decodes a step's hypothesis tests: an id, a list of ids, or a
// list mixing ids and {hypothesis, success, failure} mappings.
func (w *walker) tests(s *draftStep, n *yaml.Node, p pos) bool {
	r := w.resolve(n)
	if r == nil {
		return false
	}
	items := []*yaml.Node{r}
	switch {
	case r.Kind == yaml.ScalarNode && r.Tag == "!!null":
		return true
	case r.Kind == yaml.SequenceNode:
		items = r.Content
	case r.Kind != yaml.ScalarNode:
		w.ps.add(p, "tests must be a list of hypothesis ids (tests: [cache]) or of {hypothesis, success, failure}, got %s", describe(r))
		return false
	}
	ok := true
	for j, item := range items {
		ip := at(item, p.index(j).path)
		if r.Kind == yaml.ScalarNode {
			ip = p
		}
		key := fmt.Sprintf("tests[%d]", j)
		s.field[key] = ip
		s.field[key+".hypothesis"] = ip
		var t event.HypothesisTest
		if v := w.resolve(item); v != nil && v.Kind == yaml.ScalarNode {
			id, good := w.str(v, ip)
			ok = ok && good
			t.Hypothesis = id
			s.step.Tests = append(s.step.Tests, t)
			continue
		}
		entries, good := w.mapping(item, ip, testFields)
		if !good {
			ok = false
			continue
		}
		ok = w.strFields(s, key, ip, entries, func(name, v string) {
			switch name {
			case "hypothesis":
				t.Hypothesis = v
			case "success":
				t.Success = event.Evidence(v)
			case "failure":
				t.Failure = event.Evidence(v)
			}
		}) && ok
		s.step.Tests = append(s.step.Tests, t)
	}
	return ok
}

// strFields decodes the entries of a mapping at ip, every one a string,
// records their positions under key for the step's errors, and gives each
// to set; it reports whether all were strings.
func (w *walker) strFields(s *draftStep, key string, ip pos, entries []entry, set func(name, v string)) bool {
	ok := true
	for _, e := range entries {
		fp := at(e.val, ip.child(e.name).path)
		s.field[key+"."+e.name] = fp
		v, good := w.str(e.val, fp)
		ok = ok && good
		set(e.name, v)
	}
	return ok
}

// decodeHypotheses decodes the plan's hypotheses: a list of {id,
// statement}.
func (w *walker) decodeHypotheses(d *draft, n *yaml.Node, p pos) {
	items, ok := w.list(n, p, "e.g. - id: cache\n    statement: the build cache is stale")
	if !ok {
		return
	}
	for k, item := range items {
		ip := at(item, p.index(k).path)
		entries, ok := w.mapping(item, ip, hypothesisFields)
		if !ok {
			continue
		}
		dh := &draftHypothesis{at: ip, idAt: ip.child("id"), stateAt: ip.child("statement")}
		for _, e := range entries {
			fp := at(e.val, ip.child(e.name).path)
			switch e.name {
			case "id":
				dh.h.ID, _ = w.str(e.val, fp)
				dh.idAt = fp
			case "statement":
				dh.h.Statement, _ = w.str(e.val, fp)
				dh.stateAt, dh.statementGiven = fp, true
			}
		}
		d.hyps = append(d.hyps, dh)
	}
}

// hypothesesFromPlan gives the draft hypotheses of a plan built in code.
func hypothesesFromPlan(p *event.Plan) []*draftHypothesis {
	out := make([]*draftHypothesis, 0, len(p.Hypotheses))
	for k, h := range p.Hypotheses {
		at := pos{path: fmt.Sprintf("hypotheses[%d]", k)}
		out = append(out, &draftHypothesis{h: h, at: at, idAt: at.child("id"), stateAt: at.child("statement")})
	}
	return out
}

// checkHypotheses checks the plan's hypotheses (ids, statements, limits)
// and returns their ids in declaration order, each once.
func checkHypotheses(d *draft, ps *problems) []string {
	if len(d.hyps) > MaxHypotheses {
		ps.add(d.root.child("hypotheses"), "plan has %d hypotheses; the limit is %d", len(d.hyps), MaxHypotheses)
	}
	first := map[string]pos{}
	var ids []string
	for _, dh := range d.hyps {
		id := dh.h.ID
		switch err := event.ValidStepID(id); {
		case id == "":
			ps.add(dh.idAt, "hypothesis has no id")
		case err != nil:
			ps.add(dh.idAt, "%s", strings.Replace(err.Error(), "step id", "hypothesis id", 1))
		default:
			if at, dup := first[id]; dup {
				ps.add(dh.idAt, "duplicate hypothesis id %q (first declared at %s)", id, at)
				continue
			}
			first[id] = dh.idAt
			ids = append(ids, id)
		}
		if strings.TrimSpace(dh.h.Statement) == "" {
			ps.add(dh.stateAt, "hypothesis %q has no statement: say what is supposed (statement: the cache is stale)", id)
		}
		checkCommand(ps, dh.stateAt, "statement", dh.h.Statement)
		checkSecret(ps, dh.idAt, "id", id)
		checkSecret(ps, dh.stateAt, "statement", dh.h.Statement)
	}
	return ids
}

// checkBranches checks every step's next and tests against the plan, and
// makes each branch target depend on its branching step (a reference at
// the branch's to), so that the graph orders it later and reports a
// target the branching step waits for as a cycle. stepIdx and subIdx are
// checkIDs'.
func checkBranches(d *draft, ps *problems, stepIdx, subIdx map[string]int) {
	hyps := checkHypotheses(d, ps)
	targetOf := map[string]string{} // target id → the step whose branch names it
	for _, s := range d.steps {
		checkTests(ps, s, hyps)
		st := &s.step
		seenOn := map[event.BranchOn]string{}
		for j, b := range st.Next {
			key := fmt.Sprintf("next[%d]", j)
			onAt, toAt := s.pos(key+".on"), s.pos(key+".to")
			switch {
			case b.On == "":
				ps.add(s.pos(key), "branch has no on: say which outcome takes it (on: success or on: failure)")
			case !slices.Contains(branchOns, string(b.On)):
				ps.add(onAt, "unknown on %q; allowed: %s", b.On, strings.Join(branchOns, ", "))
			case seenOn[b.On] != "":
				ps.add(onAt, "a second branch on %s (the first goes to %q): a step takes one branch per outcome; make one target a noop step that the others depend on", b.On, seenOn[b.On])
			default:
				seenOn[b.On] = b.To
			}
			i, isStep := stepIdx[b.To]
			_, isSub := subIdx[b.To]
			switch {
			case b.To == "":
				ps.add(s.pos(key), "branch has no to: name the step it leads to")
				continue
			case b.To == st.ID:
				ps.add(toAt, "step %q branches to itself; a branch leads to a later step", st.ID)
				continue
			case isSub && !isStep:
				ps.add(toAt, "branch target %q is a subgoal; a branch leads to one step (a noop step can start the subgoal's work)", b.To)
				continue
			case !isStep:
				ps.add(toAt, "unknown step %q%s", b.To, ps.suggest(b.To, stepIDs(d)))
				continue
			}
			if j > 0 && slices.ContainsFunc(st.Next[:j], func(o event.Branch) bool { return o.To == b.To && o.On != b.On }) {
				ps.add(toAt, "both branches lead to %q: it runs either way; make it a plain dependency (depends_on: [%s])", b.To, st.ID)
				continue
			}
			if from, dup := targetOf[b.To]; dup && from != st.ID {
				ps.add(toAt, "step %q is already the target of a branch of %q: a step is reached by one branch at most; give each branch its own step and join them with a step that depends on both", b.To, from)
				continue
			}
			targetOf[b.To] = st.ID
			if slices.ContainsFunc(s.deps, func(r ref) bool { return r.id == b.To }) {
				ps.add(toAt, "step %q depends on %q, so it cannot branch to it: a branch leads to a later step", st.ID, b.To)
				continue
			}
			t := d.steps[i]
			t.deps = append(t.deps, ref{id: st.ID, at: toAt})
		}
		if seenOn[event.BranchOnFailure] != "" && st.OnFailure == event.OnFailureReplan {
			ps.add(s.pos("on_failure"), "on_failure: replan and a failure branch both route a failure; keep one")
		}
	}
}

// checkTests checks one step's hypothesis tests against the plan's
// hypotheses (ids, in order).
func checkTests(ps *problems, s *draftStep, hyps []string) {
	seen := map[string]bool{}
	for j, t := range s.step.Tests {
		key := fmt.Sprintf("tests[%d]", j)
		hAt := s.pos(key + ".hypothesis")
		switch {
		case t.Hypothesis == "":
			ps.add(hAt, "test names no hypothesis")
		case len(hyps) == 0:
			ps.add(hAt, "unknown hypothesis %q: the plan lists none (hypotheses: [{id: %s, statement: ...}])", t.Hypothesis, t.Hypothesis)
		case !slices.Contains(hyps, t.Hypothesis):
			ps.add(hAt, "unknown hypothesis %q%s", t.Hypothesis, ps.suggest(t.Hypothesis, hyps))
		case seen[t.Hypothesis]:
			ps.add(hAt, "hypothesis %q is tested twice by this step", t.Hypothesis)
		}
		seen[t.Hypothesis] = true
		for _, f := range []struct {
			name string
			v    event.Evidence
		}{{"success", t.Success}, {"failure", t.Failure}} {
			if f.v != "" && !slices.Contains(evidences, string(f.v)) {
				ps.add(s.pos(key+"."+f.name), "unknown evidence %q; allowed: %s", f.v, strings.Join(evidences, ", "))
			}
		}
		if t.Success == event.EvidenceNone && t.Failure == event.EvidenceNone {
			ps.add(s.pos(key), "test of %q gives no evidence either way (success: none, failure: none); remove it", t.Hypothesis)
		}
	}
}

// stepIDs lists the draft's step ids, for suggestions.
func stepIDs(d *draft) []string {
	ids := make([]string, len(d.steps))
	for i, s := range d.steps {
		ids[i] = s.step.ID
	}
	return ids
}

// normalBranches gives a step's branches and tests in normal form: nil
// when empty, evidence equal to its default left out.
func normalBranches(st *event.Step) {
	if len(st.Next) == 0 {
		st.Next = nil
	} else {
		st.Next = slices.Clone(st.Next)
	}
	if len(st.Tests) == 0 {
		st.Tests = nil
		return
	}
	st.Tests = slices.Clone(st.Tests)
	for i := range st.Tests {
		t := &st.Tests[i]
		if t.Success == event.EvidenceSupports {
			t.Success = ""
		}
		if t.Failure == event.EvidenceRefutes {
			t.Failure = ""
		}
	}
}

// normalHypotheses gives the plan's hypotheses in normal form (nil when
// there are none).
func normalHypotheses(d *draft) []event.Hypothesis {
	var out []event.Hypothesis
	for _, dh := range d.hyps {
		out = append(out, dh.h)
	}
	return out
}
