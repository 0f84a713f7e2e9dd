package layout_test

import (
	"fmt"
	"testing"

	"github.com/agentic-dev/agentic/roles/ui/layout"
)

// chain is a plan of a setup step and a chain of n steps of group work
// after it, each of another shape, and a report after the chain.
func chain(n int) (layout.Graph, map[string]string) {
	g := layout.Graph{Nodes: []layout.Node{{ID: "setup"}}}
	shape := map[string]string{"setup": "make"}
	prev := "setup"
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		g.Nodes = append(g.Nodes, layout.Node{ID: id, Group: "work"})
		g.Edges = append(g.Edges, layout.Edge{From: prev, To: id, Kind: layout.EdgeDepends})
		shape[id] = fmt.Sprintf("step %d", i)
		prev = id
	}
	g.Nodes = append(g.Nodes, layout.Node{ID: "report"})
	g.Edges = append(g.Edges, layout.Edge{From: prev, To: "report", Kind: layout.EdgeDepends})
	return g, shape
}

// A long chain of one subgoal collapses into one node that holds its
// steps in order, whatever their shapes; the edges into and out of it are
// kept, and the result lays out in three layers.
func TestCollapseChain(t *testing.T) {
	g, shape := chain(3000)
	c, err := layout.Collapse(g, shape, layout.DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	id := layout.GroupPrefix + "c0"
	if len(c.Graph.Nodes) != 3 || len(c.Members[id]) != 3000 || !c.Chain[id] || c.Of["c2999"] != id || c.Members[id][2999] != "c2999" {
		t.Fatalf("%d nodes, chain of %d members (chain %v): %v", len(c.Graph.Nodes), len(c.Members[id]), c.Chain[id], c.Graph.Nodes)
	}
	if len(c.Graph.Edges) != 2 {
		t.Fatalf("edges %v, want setup→chain→report", c.Graph.Edges)
	}
	r, err := layout.Layout(c.Graph, layout.Options{})
	if err != nil || r.Layers != 3 {
		t.Fatalf("laid out in %v layers (%v)", r, err)
	}
}

// A chain stops where a step has another dependency or dependant, or
// another subgoal; short chains and kept steps (an expanded group's) stay
// apart.
func TestCollapseChainBounds(t *testing.T) {
	g, shape := chain(400)
	// c100 has a second dependant, c200 a second dependency: the chain
	// breaks after c100 and before c200.
	g.Nodes = append(g.Nodes, layout.Node{ID: "side", Group: "work"})
	g.Edges = append(g.Edges, layout.Edge{From: "c100", To: "side"}, layout.Edge{From: "side", To: "c200"})
	// c300…c399 are in another subgoal.
	for i := 300; i < 400; i++ {
		g.Nodes[i+1].Group = "other"
	}
	c, err := layout.Collapse(g, shape, layout.DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	for first, n := range map[string]int{"c0": 101, "c101": 99, "c200": 100, "c300": 100} {
		if got := len(c.Members[layout.GroupPrefix+first]); got != n {
			t.Errorf("chain from %s holds %d steps, want %d", first, got, n)
		}
	}
	if c.Of["side"] != "side" {
		t.Errorf("side is in %s", c.Of["side"])
	}
	// Kept steps are drawn one by one.
	keep := map[string]bool{}
	for _, m := range c.Members[layout.GroupPrefix+"c0"] {
		keep[m] = true
	}
	k, err := layout.CollapseBy(g, shape, layout.Grouping{Threshold: layout.DefaultThreshold, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	if k.Of["c50"] != "c50" || len(k.Members[layout.GroupPrefix+"c101"]) != 99 {
		t.Errorf("with c0…c100 kept: c50 in %s, the next chain %d", k.Of["c50"], len(k.Members[layout.GroupPrefix+"c101"]))
	}
	// A short chain stays as it is.
	s, sshape := chain(5)
	for i := range 400 {
		id := fmt.Sprintf("x%d", i)
		s.Nodes = append(s.Nodes, layout.Node{ID: id})
		sshape[id] = id // no fan-out to group either
	}
	sc, err := layout.Collapse(s, sshape, layout.DefaultThreshold)
	if err != nil || len(sc.Members) != 0 {
		t.Fatalf("a chain of 5 collapsed: %v %v", sc.Members, err)
	}
}
