package plan

// edge is one dependency of a step: the step depends on step to. at
// locates the reference that made the edge (a step's depends_on entry, or a
// subgoal's when the edge comes from expanding a subgoal dependency).
type edge struct {
	to int
	at pos
}

// graph is the step dependency graph of a draft. Building it resolves every
// reference, expands subgoal references, and reports unknown references and
// cycles.
//
// Expansion keeps the edge count small: a dependency of subgoal A on
// subgoal B becomes edges from A's entry steps (those with no dependency
// inside A) to B's exit steps (those nothing inside B depends on). Every
// step of A reaches an entry of A and every step of B is reached from an
// exit of B, so each step of A still (transitively) waits for every step of
// B. A step that depends on a subgoal depends on its exit steps; a subgoal
// that depends on a step has its entry steps depend on it.
type graph struct {
	d       *draft
	ps      *problems
	stepIdx map[string]int
	subIdx  map[string]int
	// sgOf is each step's subgoal index, -1 for top-level steps.
	sgOf    []int
	members [][]int
	deps    [][]edge
	seen    map[[2]int]bool
	full    bool
	ids     []string
}

// newGraph resolves the draft's references into a graph, reporting what
// does not resolve and every cycle.
func newGraph(d *draft, ps *problems, stepIdx, subIdx map[string]int) *graph {
	g := &graph{
		d: d, ps: ps, stepIdx: stepIdx, subIdx: subIdx,
		sgOf:    make([]int, len(d.steps)),
		members: make([][]int, len(d.subgoals)),
		deps:    make([][]edge, len(d.steps)),
		seen:    make(map[[2]int]bool),
	}
	g.assignSubgoals()
	sgRefs := g.resolveStepDeps()
	g.critiqueDeps()
	entries, exits := g.ends()
	for _, r := range sgRefs {
		for _, x := range exits[r.sg] {
			g.add(r.from, x, r.at)
		}
	}
	subDeps := g.resolveSubgoalDeps(entries)
	if !g.reportCycles(subDeps, "subgoal ", func(k int) string { return d.subgoals[k].id }) {
		for a, es := range subDeps {
			for _, e := range es {
				for _, x := range entries[a] {
					for _, y := range exits[e.to] {
						g.add(x, y, e.at)
					}
				}
			}
		}
	}
	g.reportCycles(g.deps, "", func(i int) string { return d.steps[i].step.ID })
	return g
}

// assignSubgoals files every step under its subgoal and reports unknown
// subgoal labels and subgoals without steps.
func (g *graph) assignSubgoals() {
	for i, s := range g.d.steps {
		g.sgOf[i] = -1
		label := s.step.Subgoal
		if label == "" {
			continue
		}
		k, ok := g.subIdx[label]
		if !ok {
			g.ps.add(s.pos("subgoal"), "unknown subgoal %q%s", label, g.ps.suggest(label, g.subgoalIDs()))
			continue
		}
		g.sgOf[i] = k
		g.members[k] = append(g.members[k], i)
	}
	for k, sg := range g.d.subgoals {
		if sg.id != "" && g.subIdx[sg.id] == k && len(g.members[k]) == 0 {
			g.ps.add(sg.at, "subgoal %q has no steps", sg.id)
		}
	}
}

// sgRef is a step's dependency on a whole subgoal, expanded once the
// subgoal's exit steps are known.
type sgRef struct {
	from, sg int
	at       pos
}

// resolveStepDeps adds the step → step edges and returns the step →
// subgoal references.
func (g *graph) resolveStepDeps() []sgRef {
	var refs []sgRef
	for i, s := range g.d.steps {
		for _, r := range s.deps {
			j, isStep := g.stepIdx[r.id]
			k, isSub := g.subIdx[r.id]
			switch {
			case r.id == "":
				g.ps.add(r.at, "empty dependency")
			case isStep && j == i:
				g.ps.add(r.at, "step %q depends on itself", s.step.ID)
			case isStep:
				g.add(i, j, r.at)
			case isSub && k == g.sgOf[i]:
				g.ps.add(r.at, "step %q depends on its own subgoal %q", s.step.ID, r.id)
			case isSub:
				refs = append(refs, sgRef{from: i, sg: k, at: r.at})
			default:
				g.unknown(r, "step")
			}
		}
	}
	return refs
}

// resolveSubgoalDeps returns the subgoal → subgoal edges and adds the edges
// of subgoals that depend on single steps.
func (g *graph) resolveSubgoalDeps(entries [][]int) [][]edge {
	subDeps := make([][]edge, len(g.d.subgoals))
	for a, sg := range g.d.subgoals {
		if sg.id == "" || g.subIdx[sg.id] != a {
			continue // reported by checkIDs
		}
		for _, r := range sg.deps {
			b, isSub := g.subIdx[r.id]
			j, isStep := g.stepIdx[r.id]
			switch {
			case r.id == "":
				g.ps.add(r.at, "empty dependency")
			case isSub && b == a:
				g.ps.add(r.at, "subgoal %q depends on itself", sg.id)
			case isSub:
				subDeps[a] = append(subDeps[a], edge{to: b, at: r.at})
			case isStep && g.sgOf[j] == a:
				g.ps.add(r.at, "subgoal %q depends on its own step %q", sg.id, r.id)
			case isStep:
				for _, x := range entries[a] {
					g.add(x, j, r.at)
				}
			default:
				g.unknown(r, "subgoal")
			}
		}
	}
	return subDeps
}

// ends returns each subgoal's entry steps (no dependency inside the
// subgoal) and exit steps (no dependent inside the subgoal), computed from
// the step → step edges.
func (g *graph) ends() (entries, exits [][]int) {
	inner := make([]bool, len(g.deps))
	fed := make([]bool, len(g.deps))
	for i, es := range g.deps {
		for _, e := range es {
			if g.sgOf[i] >= 0 && g.sgOf[i] == g.sgOf[e.to] {
				inner[i], fed[e.to] = true, true
			}
		}
	}
	entries = make([][]int, len(g.members))
	exits = make([][]int, len(g.members))
	for k, ms := range g.members {
		for _, i := range ms {
			if !inner[i] {
				entries[k] = append(entries[k], i)
			}
			if !fed[i] {
				exits[k] = append(exits[k], i)
			}
		}
	}
	return entries, exits
}

// add records that step i depends on step j, once.
func (g *graph) add(i, j int, at pos) {
	if i == j || g.seen[[2]int{i, j}] || g.full {
		return
	}
	if len(g.seen) >= MaxDependencies {
		g.full = true
		g.ps.add(g.d.root, "plan has more than %d dependencies once subgoal dependencies are expanded "+
			"(each entry step of a subgoal depends on each exit step of the subgoals it depends on): "+
			"join wide subgoals with a noop step, or split the plan", MaxDependencies)
		return
	}
	g.seen[[2]int{i, j}] = true
	g.deps[i] = append(g.deps[i], edge{to: j, at: at})
}

// unknown reports a reference to an id that is neither a step nor a
// subgoal. from is "step" or "subgoal": whose depends_on it is in.
func (g *graph) unknown(r ref, from string) {
	what := "step"
	switch {
	case from == "subgoal":
		what = "subgoal or step"
	case len(g.d.subgoals) > 0:
		what = "step or subgoal"
	}
	g.ps.add(r.at, "unknown %s %q%s", what, r.id, g.ps.suggest(r.id, g.allIDs()))
}

func (g *graph) allIDs() []string {
	if g.ids == nil {
		g.ids = make([]string, 0, len(g.d.steps)+len(g.d.subgoals))
		for _, s := range g.d.steps {
			g.ids = append(g.ids, s.step.ID)
		}
		g.ids = append(g.ids, g.subgoalIDs()...)
	}
	return g.ids
}

func (g *graph) subgoalIDs() []string {
	ids := make([]string, 0, len(g.d.subgoals))
	for _, sg := range g.d.subgoals {
		ids = append(ids, sg.id)
	}
	return ids
}
