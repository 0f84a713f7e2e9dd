package plan

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Fields of each element of the plan file formats.
var (
	planFields     = []string{"goal", "steps", "subgoals", "hypotheses", "git", "family"}
	subgoalFields  = []string{"id", "title", "depends_on", "steps"}
	stepFields     = []string{"id", "title", "kind", "run", "depends_on", "timeout", "retries", "backoff", "idempotent", "creates", "check", "on_failure", "env", "cwd", "capabilities", "path", "content", "mode", "patch", "compensate", "run_as", "next", "tests", "target", "criteria", "tool", "args", "facts", "releases", "outputs", "inputs", "questions", "sources"}
	seedFields     = []string{"mode", "goal", "steps"}
	seedStepFields = []string{"goal", "commands"}
)

const stepExample = "e.g. - id: build\n    run: make"

// decode turns the root node of a plan file into a draft, in the flat,
// hierarchical or seed format.
func (w *walker) decode(root *yaml.Node) *draft {
	d := &draft{root: at(root, "")}
	if r := w.resolve(root); r != nil && r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		w.ps.add(d.root, "plan file is empty")
		d.stepsBad = true
		return d
	}
	if isSeed(root) {
		w.decodeSeed(root, d)
		return d
	}
	entries, ok := w.mapping(root, d.root, planFields)
	if !ok {
		d.stepsBad = true
		return d
	}
	for _, e := range entries {
		p := at(e.val, e.name)
		switch e.name {
		case "goal":
			d.goal, _ = w.str(e.val, p)
			d.goalAt = &p
		case "steps":
			w.decodeSteps(d, e.val, p, "")
		case "subgoals":
			w.decodeSubgoals(d, e.val, p)
		case "hypotheses":
			w.decodeHypotheses(d, e.val, p)
		case "git":
			w.decodeGit(d, e.val, p)
		case "family":
			w.family(d, e.val, p) // facts.go
		}
	}
	return d
}

// isSeed reports whether root is in the seed format: it has a "mode" key,
// or its first step has "commands" (and no "subgoals" key exists).
func isSeed(root *yaml.Node) bool {
	m := deref(root)
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	if lookup(m, "mode") != nil {
		return true
	}
	if lookup(m, "subgoals") != nil {
		return false
	}
	steps := deref(lookup(m, "steps"))
	if steps == nil || steps.Kind != yaml.SequenceNode || len(steps.Content) == 0 {
		return false
	}
	first := deref(steps.Content[0])
	return first != nil && first.Kind == yaml.MappingNode && lookup(first, "commands") != nil &&
		lookup(first, "run") == nil && lookup(first, "id") == nil
}

// deref follows aliases without counting (for format sniffing only).
func deref(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode && hops < 64; hops++ {
		n = n.Alias
	}
	return n
}

// lookup returns the value of an explicit key of mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key && k.Tag != "!!merge" {
			return m.Content[i+1]
		}
	}
	return nil
}

// decodeSteps decodes a list of steps labelled with subgoal.
func (w *walker) decodeSteps(d *draft, n *yaml.Node, p pos, subgoal string) {
	items, ok := w.list(n, p, stepExample)
	if !ok {
		d.stepsBad = true
		return
	}
	for j, item := range items {
		if w.exhausted || !w.room(d) {
			return
		}
		if s := w.decodeStep(item, at(item, p.index(j).path), subgoal); s != nil {
			d.steps = append(d.steps, s)
		} else {
			d.stepsBad = true
		}
	}
}

// room reports whether d may take one more step, reporting (once) when not.
func (w *walker) room(d *draft) bool {
	if len(d.steps) < MaxSteps {
		return true
	}
	if !d.truncated {
		d.truncated = true
		w.ps.add(d.root, "plan has more than %d steps; split it into smaller plans", MaxSteps)
	}
	return false
}

// decodeStep decodes one step; nil when n is not a mapping.
func (w *walker) decodeStep(n *yaml.Node, p pos, subgoal string) *draftStep {
	entries, ok := w.mapping(n, p, stepFields)
	if !ok {
		return nil
	}
	s := &draftStep{at: p, field: make(map[string]pos, len(entries)), bad: map[string]bool{}}
	s.step.Subgoal = subgoal
	for _, e := range entries {
		fp := at(e.val, p.child(e.name).path)
		s.field[e.name] = fp
		if !w.stepField(s, e, fp) {
			s.bad[e.name] = true
		}
	}
	return s
}

// stepField decodes one field of a step into s.
func (w *walker) stepField(s *draftStep, e entry, p pos) (ok bool) {
	st := &s.step
	switch e.name {
	case "id":
		st.ID, ok = w.str(e.val, p)
	case "title":
		st.Title, ok = w.str(e.val, p)
	case "kind":
		var kind string
		kind, ok = w.str(e.val, p)
		st.Kind = event.StepKind(kind)
	case "run":
		st.Run, ok = w.str(e.val, p)
	case "depends_on":
		s.deps, ok = w.refs(e.val, p)
	case "timeout":
		st.Timeout, ok = w.duration(e.val, p)
	case "retries":
		st.Retries, ok = w.integer(e.val, p)
	case "backoff":
		st.Backoff, ok = w.duration(e.val, p)
	case "idempotent":
		st.Idempotent, ok = w.boolean(e.val, p)
	case "creates":
		st.Creates, ok = w.str(e.val, p)
	case "check":
		st.Check, ok = w.str(e.val, p)
	case "on_failure":
		var route string
		route, ok = w.str(e.val, p)
		st.OnFailure = event.OnFailure(route)
	case "env":
		ok = w.env(s, e.val, p)
	case "cwd":
		st.Cwd, ok = w.str(e.val, p)
	case "path":
		st.Path, ok = w.str(e.val, p)
	case "content":
		st.Content, ok = w.str(e.val, p)
	case "mode":
		st.Mode, ok = w.mode(e.val, p)
	case "patch":
		st.Patch, ok = w.str(e.val, p)
	case "compensate":
		st.Compensate, ok = w.str(e.val, p)
	case "run_as":
		st.RunAs, ok = w.str(e.val, p)
	case "next":
		ok = w.next(s, e.val, p)
	case "tests":
		ok = w.tests(s, e.val, p)
	case "facts":
		ok = w.facts(s, e.val, p) // facts.go
	case "releases":
		ok = w.releases(s, e.val, p) // facts.go
	case "outputs":
		ok = w.outputs(s, e.val, p) // artifacts.go
	case "inputs":
		ok = w.inputs(s, e.val, p) // artifacts.go
	case "target", "criteria":
		ok = w.critiqueField(s, e.name, e.val, p)
	case "questions", "sources":
		ok = w.researchField(s, e.name, e.val, p) // research.go
	case "tool", "args":
		ok = w.toolField(s, e.name, e.val, p)
	case "capabilities":
		var caps []ref
		caps, ok = w.refs(e.val, p)
		for j, c := range caps {
			st.Capabilities = append(st.Capabilities, c.id)
			s.field[fmt.Sprintf("capabilities[%d]", j)] = c.at
		}
	}
	return ok
}

// env decodes a step's environment: a mapping of names to scalar values.
func (w *walker) env(s *draftStep, n *yaml.Node, p pos) bool {
	if r := w.resolve(n); r != nil && r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		return true
	}
	entries, ok := w.mapping(n, p, nil)
	if !ok {
		return false
	}
	s.step.Env = make(map[string]string, len(entries))
	for _, e := range entries {
		kp := at(e.key, p.child(e.name).path)
		s.field["env."+e.name] = kp
		v, good := w.str(e.val, at(e.val, kp.path))
		ok = ok && good
		s.step.Env[e.name] = v
	}
	return ok
}

// decodeSubgoals decodes the subgoals list and their steps.
func (w *walker) decodeSubgoals(d *draft, n *yaml.Node, p pos) {
	items, ok := w.list(n, p, "e.g. - id: setup\n    steps: [...]")
	if !ok {
		d.stepsBad = true
		return
	}
	for k, item := range items {
		if w.exhausted {
			return
		}
		ip := at(item, p.index(k).path)
		entries, ok := w.mapping(item, ip, subgoalFields)
		if !ok {
			d.stepsBad = true
			continue
		}
		sg := &draftSubgoal{at: ip, idAt: ip.child("id")}
		var steps *entry
		for _, e := range entries {
			fp := at(e.val, ip.child(e.name).path)
			switch e.name {
			case "id":
				sg.id, _ = w.str(e.val, fp)
				sg.idAt = fp
			case "title":
				sg.title, _ = w.str(e.val, fp)
			case "depends_on":
				sg.deps, _ = w.refs(e.val, fp)
			case "steps":
				steps = &e
			}
		}
		d.subgoals = append(d.subgoals, sg)
		if steps != nil {
			w.decodeSteps(d, steps.val, at(steps.val, ip.child("steps").path), sg.id)
		}
	}
}
