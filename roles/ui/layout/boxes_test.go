package layout_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentic-dev/agentic/roles/ui/layout"
)

// randomPlan is a random DAG of n steps in subgoals the way planners
// write them: mostly sequential subgoals, edges to earlier steps, some
// steps in no subgoal; the same seed gives the same plan.
func randomPlan(seed uint64, n, groups int) layout.Graph {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var g layout.Graph
	for i := range n {
		group := fmt.Sprintf("sg%d", min(groups-1, i*groups/n+rng.IntN(2)))
		if rng.IntN(10) == 0 {
			group = ""
		}
		id := fmt.Sprintf("s%d", i)
		g.Nodes = append(g.Nodes, layout.Node{ID: id, Group: group})
		for range rng.IntN(3) {
			if i > 0 {
				g.Edges = append(g.Edges, layout.Edge{From: fmt.Sprintf("s%d", rng.IntN(i)), To: id, Kind: layout.EdgeDepends})
			}
		}
	}
	return g
}

// overlap reports whether two boxes share any area, or whether b's title
// (drawn just above it) lies on a.
func overlap(a, b layout.Box) bool {
	const title = 12
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y-title < a.Y+a.H
}

// No two subgoal boxes overlap (nor a title lie on another box), whatever
// the plan: random plans of several sizes and seeds; and no step lies in
// the box of a subgoal it is not part of.
func TestGroupBoxesNeverOverlap(t *testing.T) {
	for _, c := range []struct {
		seed          uint64
		steps, groups int
	}{{1, 20, 3}, {2, 40, 5}, {3, 60, 4}, {4, 120, 8}, {5, 200, 6}, {6, 30, 10}} {
		g := randomPlan(c.seed, c.steps, c.groups)
		r, err := layout.Layout(g, layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range r.Boxes {
			for _, b := range r.Boxes[i+1:] {
				if overlap(a, b) || overlap(b, a) {
					t.Errorf("seed %d: boxes of %s %+v and %s %+v overlap", c.seed, a.Group, a, b.Group, b)
				}
			}
			for _, p := range r.Nodes {
				if p.Group != a.Group && p.X < a.X+a.W && a.X < p.X+p.W && p.Y < a.Y+a.H && a.Y < p.Y+p.H {
					t.Errorf("seed %d: step %s (group %q) lies in the box of %s", c.seed, p.ID, p.Group, a.Group)
				}
			}
		}
	}
}
