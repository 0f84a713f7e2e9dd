package layout_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentic-dev/agentic/roles/ui/layout"
)

func graph(edges ...string) layout.Graph {
	var g layout.Graph
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			g.Nodes = append(g.Nodes, layout.Node{ID: id})
		}
	}
	for _, e := range edges {
		var a, b string
		if _, err := fmt.Sscanf(e, "%s %s", &a, &b); err != nil {
			add(e)
			continue
		}
		add(a)
		add(b)
		g.Edges = append(g.Edges, layout.Edge{From: a, To: b, Kind: layout.EdgeDepends})
	}
	return g
}

func byID(r *layout.Result) map[string]layout.Pos {
	m := map[string]layout.Pos{}
	for _, p := range r.Nodes {
		m[p.ID] = p
	}
	return m
}

// Every edge goes left to right, and a node's layer is its longest path.
func TestLayersAreLongestPaths(t *testing.T) {
	g := graph("a b", "b c", "a c", "c d", "x d")
	r, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := byID(r)
	want := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "x": 0}
	for id, l := range want {
		if p[id].Layer != l {
			t.Errorf("%s: layer %d, want %d", id, p[id].Layer, l)
		}
	}
	for _, l := range r.Lines {
		if l.X1 >= l.X2 {
			t.Errorf("edge %s→%s goes from x %d to x %d", l.From, l.To, l.X1, l.X2)
		}
	}
	if r.Layers != 4 {
		t.Errorf("layers %d, want 4", r.Layers)
	}
}

// No two nodes overlap, and all are inside the drawing.
func TestNoOverlap(t *testing.T) {
	g := wide(40, 6)
	r, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range r.Nodes {
		if a.X < 0 || a.Y < 0 || a.X+a.W > r.Width || a.Y+a.H > r.Height {
			t.Fatalf("%s at %d,%d %dx%d is outside %dx%d", a.ID, a.X, a.Y, a.W, a.H, r.Width, r.Height)
		}
		for _, b := range r.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Fatalf("%s and %s overlap", a.ID, b.ID)
			}
		}
	}
}

// The sweeps remove the crossings of a graph drawn crossed in its given
// order: a1→b2, a2→b1 becomes parallel.
func TestSweepsUncross(t *testing.T) {
	g := graph("a1", "a2", "b1", "b2", "a1 b2", "a2 b1")
	// Put the nodes in the crossing order.
	g.Nodes = []layout.Node{{ID: "a1"}, {ID: "a2"}, {ID: "b1"}, {ID: "b2"}}
	r, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := crossings(r); n != 0 {
		t.Fatalf("%d crossings after the sweeps, want 0: %+v", n, r.Nodes)
	}
}

// The members of a group are next to each other in every layer.
func TestGroupsStayTogether(t *testing.T) {
	var g layout.Graph
	for i := range 12 {
		group := []string{"x", "y", "z"}[i%3]
		g.Nodes = append(g.Nodes, layout.Node{ID: fmt.Sprintf("n%d", i), Group: group})
	}
	r, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	last, seen := "", map[string]bool{}
	for _, row := range rowsOf(r) {
		for _, p := range row {
			if p.Group != last && seen[p.Group] {
				t.Fatalf("group %s is split: %v", p.Group, row)
			}
			seen[p.Group], last = true, p.Group
		}
	}
	if len(r.Boxes) != 3 {
		t.Fatalf("%d group boxes, want 3", len(r.Boxes))
	}
}

// The same graph gives the same layout, every time.
func TestDeterministic(t *testing.T) {
	g := wide(300, 8)
	a, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, _ := layout.Layout(g, layout.Options{})
		if !reflect.DeepEqual(a, b) {
			t.Fatal("two layouts of one graph differ")
		}
	}
}

func TestBadGraphs(t *testing.T) {
	for name, g := range map[string]layout.Graph{
		"cycle":   graph("a b", "b c", "c a"),
		"self":    graph("a a"),
		"unknown": {Nodes: []layout.Node{{ID: "a"}}, Edges: []layout.Edge{{From: "a", To: "ghost"}}},
		"dup":     {Nodes: []layout.Node{{ID: "a"}, {ID: "a"}}},
	} {
		if _, err := layout.Layout(g, layout.Options{}); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "cycle" && !errors.Is(err, layout.ErrCycle) {
			t.Errorf("cycle: %v is not ErrCycle", err)
		}
	}
}

// A fan-out of 1,000 same-shaped steps collapses into one node with its
// members; edges into and out of it are kept once.
func TestCollapseFanOut(t *testing.T) {
	g := layout.Graph{Nodes: []layout.Node{{ID: "setup", Group: "prep"}}}
	shape := map[string]string{"setup": "apt-get install"}
	for i := range 1000 {
		id := fmt.Sprintf("w%d", i)
		g.Nodes = append(g.Nodes, layout.Node{ID: id, Group: "work"})
		g.Edges = append(g.Edges, layout.Edge{From: "setup", To: id, Kind: layout.EdgeDepends}, layout.Edge{From: id, To: "merge", Kind: layout.EdgeDepends})
		shape[id] = "curl -s"
		if i == 7 {
			shape[id] = "wget" // another shape stays apart
		}
	}
	g.Nodes = append(g.Nodes, layout.Node{ID: "merge", Group: "work"})
	c, err := layout.Collapse(g, shape, layout.DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Graph.Nodes) != 4 {
		t.Fatalf("%d nodes after collapse, want 4 (setup, the group, w7, merge): %v", len(c.Graph.Nodes), c.Graph.Nodes)
	}
	grp := layout.GroupPrefix + "w0"
	if len(c.Members[grp]) != 999 || c.Of["w500"] != grp || c.Of["w7"] != "w7" || c.Of["setup"] != "setup" {
		t.Fatalf("members %d, w500 in %q, w7 in %q", len(c.Members[grp]), c.Of["w500"], c.Of["w7"])
	}
	if len(c.Graph.Edges) != 4 {
		t.Fatalf("%d edges, want 4: %v", len(c.Graph.Edges), c.Graph.Edges)
	}
	if _, err := layout.Layout(c.Graph, layout.Options{}); err != nil {
		t.Fatal(err)
	}
	// At or under the threshold nothing changes.
	small, err := layout.Collapse(g, shape, 5000)
	if err != nil || len(small.Graph.Nodes) != len(g.Nodes) || len(small.Members) != 0 {
		t.Fatalf("under the threshold: %d nodes, %v", len(small.Graph.Nodes), err)
	}
}

// Steps of one shape in different layers (a chain) are not merged: that
// could make a cycle.
func TestCollapseKeepsLayersApart(t *testing.T) {
	g := graph("a b", "b c")
	c, err := layout.Collapse(g, map[string]string{"a": "s", "b": "s", "c": "s"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Graph.Nodes) != 3 {
		t.Fatalf("a chain collapsed into %d nodes", len(c.Graph.Nodes))
	}
}

// wide is a plan of layers×width steps, each depending on two steps of the
// layer before, in a scrambled order.
func wide(width, layers int) layout.Graph {
	var g layout.Graph
	for l := range layers {
		for i := range width {
			id := fmt.Sprintf("s%d.%d", l, i)
			g.Nodes = append(g.Nodes, layout.Node{ID: id, Group: fmt.Sprintf("g%d", i%5)})
			if l > 0 {
				for _, j := range []int{(i * 7) % width, (i*13 + 3) % width} {
					g.Edges = append(g.Edges, layout.Edge{From: fmt.Sprintf("s%d.%d", l-1, j), To: id, Kind: layout.EdgeDepends})
				}
			}
		}
	}
	return g
}

func rowsOf(r *layout.Result) [][]layout.Pos {
	rows := make([][]layout.Pos, r.Layers)
	for _, p := range r.Nodes {
		rows[p.Layer] = append(rows[p.Layer], p)
	}
	for _, row := range rows {
		for i := 1; i < len(row); i++ {
			for j := i; j > 0 && row[j].Row < row[j-1].Row; j-- {
				row[j], row[j-1] = row[j-1], row[j]
			}
		}
	}
	return rows
}

func crossings(r *layout.Result) int {
	n := 0
	for i, a := range r.Lines {
		for _, b := range r.Lines[i+1:] {
			if a.X1 == b.X1 && a.X2 == b.X2 && (a.Y1-b.Y1)*(a.Y2-b.Y2) < 0 {
				n++
			}
		}
	}
	return n
}

// BenchmarkLayout5000 lays out a plan of 5,000 steps (the target: at most
// 100 ms on the project's machine).
func BenchmarkLayout5000(b *testing.B) {
	g := wide(500, 10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := layout.Layout(g, layout.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCollapse5000 groups the fan-out of the same plan.
func BenchmarkCollapse5000(b *testing.B) {
	g := wide(500, 10)
	shape := map[string]string{}
	for _, v := range g.Nodes {
		shape[v.ID] = "make"
	}
	for b.Loop() {
		if _, err := layout.Collapse(g, shape, layout.DefaultThreshold); err != nil {
			b.Fatal(err)
		}
	}
}

// A group's title, drawn just above its box, lies on no other group's
// box: lanes of chains stacked in every layer (the case where each box
// sits right under another) keep a title's room between them.
func TestGroupTitlesHaveRoom(t *testing.T) {
	var g layout.Graph
	for lane := range 5 {
		group := fmt.Sprintf("lane%d", lane)
		for i := range 4 {
			id := fmt.Sprintf("l%ds%d", lane, i)
			g.Nodes = append(g.Nodes, layout.Node{ID: id, Group: group})
			if i > 0 {
				g.Edges = append(g.Edges, layout.Edge{From: fmt.Sprintf("l%ds%d", lane, i-1), To: id})
			}
		}
	}
	r, err := layout.Layout(g, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const title = 12 // the title's height above its box, in pixels
	for _, a := range r.Boxes {
		for _, b := range r.Boxes {
			if a.Group == b.Group || a.X >= b.X+b.W || b.X >= a.X+a.W {
				continue
			}
			if b.Y > a.Y && b.Y-title < a.Y+a.H {
				t.Errorf("the title of %s (box at y=%d) lies on %s (y=%d..%d)", b.Group, b.Y, a.Group, a.Y, a.Y+a.H)
			}
		}
	}
}
