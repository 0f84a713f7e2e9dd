// Package layout places a plan's DAG on a plane, on the server, so that a
// browser only draws positions: the run page of a plan of thousands of
// steps never lays anything out itself.
//
// The layout is layered, left to right: a node's layer is the length of the
// longest path to it from a source (every edge goes to a later layer), and
// a few barycenter sweeps order each layer to reduce crossings, keeping the
// nodes of one group (a subgoal) together. Each sweep is O(V+E log) in the
// size of the graph. It is deterministic: the same graph gives the same
// positions, whatever the map order or the machine.
//
// Collapse groups fan-out: above a threshold, the nodes of one group, one
// shape and one layer become a single node that counts its members, so a
// plan of 5,000 steps draws as a few dozen boxes.
package layout

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Node is one vertex: a step, or a group of steps after Collapse.
type Node struct {
	// ID is unique in the graph.
	ID string
	// Group is the subgoal it belongs to ("" for none): the nodes of a
	// group are kept next to each other in each layer.
	Group string
}

// EdgeKind says why an edge is there.
type EdgeKind string

// Edge kinds: a dependency (depends_on) or a branch (next).
const (
	EdgeDepends EdgeKind = "depends"
	EdgeBranch  EdgeKind = "branch"
)

// Edge goes from the node that must come first to the one that follows.
type Edge struct {
	From, To string
	Kind     EdgeKind
	// Label is shown on the edge (a branch's outcome), if any.
	Label string
}

// Graph is what Layout places.
type Graph struct {
	Nodes []Node
	Edges []Edge
}

// Options are the sizes of the drawing, in pixels; zero fields take the
// defaults (DefaultOptions).
type Options struct {
	NodeWidth, NodeHeight int
	// LayerGap is the horizontal space between two layers, RowGap the
	// vertical space between two nodes of a layer.
	LayerGap, RowGap int
	// Sweeps is how many crossing-reduction sweeps run (each one down and
	// up the layers).
	Sweeps int
}

// DefaultOptions are the sizes the run page draws with.
var DefaultOptions = Options{NodeWidth: 160, NodeHeight: 36, LayerGap: 60, RowGap: 14, Sweeps: 4}

// Pos is a placed node: its box's top-left corner and size.
type Pos struct {
	ID    string
	Group string
	Layer int
	// Row is its place in its layer, from the top.
	Row        int
	X, Y, W, H int
}

// Line is a placed edge, from the right middle of its source to the left
// middle of its target.
type Line struct {
	From, To       string
	Kind           EdgeKind
	Label          string
	X1, Y1, X2, Y2 int
}

// Box is the bounding box of a group's nodes.
type Box struct {
	Group      string
	X, Y, W, H int
}

// Result is a laid out graph: nodes in the order of the graph given,
// edges likewise, the groups' boxes in the order their groups first
// appear, and the size of the whole drawing.
type Result struct {
	Nodes         []Pos
	Lines         []Line
	Boxes         []Box
	Width, Height int
	Layers        int
}

// ErrCycle is returned for a graph that is not acyclic.
var ErrCycle = errors.New("layout: the graph has a cycle")

// Layout places g. Edges naming an unknown node and duplicate node ids are
// errors, as is a cycle; a plan that the orchestrator accepted has none.
func Layout(g Graph, o Options) (*Result, error) {
	o = o.withDefaults()
	n := len(g.Nodes)
	index := make(map[string]int, n)
	for i, v := range g.Nodes {
		if _, dup := index[v.ID]; dup {
			return nil, fmt.Errorf("layout: node %q appears twice", v.ID)
		}
		index[v.ID] = i
	}
	// Adjacency in compact form: edge endpoints as indexes.
	from := make([]int32, len(g.Edges))
	to := make([]int32, len(g.Edges))
	outDeg := make([]int32, n+1)
	inDeg := make([]int32, n+1)
	for k, e := range g.Edges {
		a, okA := index[e.From]
		b, okB := index[e.To]
		if !okA || !okB {
			return nil, fmt.Errorf("layout: edge %s→%s names a node the graph does not have", e.From, e.To)
		}
		if a == b {
			return nil, fmt.Errorf("%w: %s depends on itself", ErrCycle, e.From)
		}
		from[k], to[k] = int32(a), int32(b)
		outDeg[a+1]++
		inDeg[b+1]++
	}
	for i := 1; i <= n; i++ {
		outDeg[i] += outDeg[i-1]
		inDeg[i] += inDeg[i-1]
	}
	succ := make([]int32, len(g.Edges))
	pred := make([]int32, len(g.Edges))
	fillO := slices.Clone(outDeg[:n])
	fillI := slices.Clone(inDeg[:n])
	for k := range g.Edges {
		succ[fillO[from[k]]] = to[k]
		fillO[from[k]]++
		pred[fillI[to[k]]] = from[k]
		fillI[to[k]]++
	}
	succOf := func(i int32) []int32 { return succ[outDeg[i]:outDeg[i+1]] }
	predOf := func(i int32) []int32 { return pred[inDeg[i]:inDeg[i+1]] }

	// Longest-path layering by Kahn's algorithm, in graph order.
	layer := make([]int32, n)
	waiting := make([]int32, n)
	queue := make([]int32, 0, n)
	for i := range n {
		waiting[i] = inDeg[i+1] - inDeg[i]
		if waiting[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		for _, w := range succOf(v) {
			layer[w] = max(layer[w], layer[v]+1)
			if waiting[w]--; waiting[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	if len(queue) != n {
		return nil, fmt.Errorf("%w: %d of %d nodes are on or after one", ErrCycle, n-len(queue), n)
	}
	layers := 0
	for _, l := range layer {
		layers = max(layers, int(l)+1)
	}
	// Initial order: graph order within each layer, grouped.
	rows := make([][]int32, layers)
	for i := range n {
		rows[layer[i]] = append(rows[layer[i]], int32(i))
	}
	// Groups get a rank by first appearance; their members stay together.
	groupRank := make([]int32, n)
	ranks := map[string]int32{}
	for i, v := range g.Nodes {
		r, ok := ranks[v.Group]
		if !ok {
			r = int32(len(ranks))
			ranks[v.Group] = r
		}
		groupRank[i] = r
	}
	for _, row := range rows {
		slices.SortStableFunc(row, func(a, b int32) int { return cmp.Compare(groupRank[a], groupRank[b]) })
	}
	pos := make([]float64, n) // a node's row, normalised to [0, 1] in its layer
	place := func() {
		for _, row := range rows {
			for r, v := range row {
				pos[v] = float64(r+1) / float64(len(row)+1)
			}
		}
	}
	place()
	bary := make([]float64, n)
	sortRow := func(row []int32, neigh func(int32) []int32) {
		groupSum := map[int32]float64{}
		groupCount := map[int32]int{}
		for _, v := range row {
			ns := neigh(v)
			if len(ns) == 0 {
				bary[v] = pos[v]
			} else {
				s := 0.0
				for _, w := range ns {
					s += pos[w]
				}
				bary[v] = s / float64(len(ns))
			}
			groupSum[groupRank[v]] += bary[v]
			groupCount[groupRank[v]]++
		}
		slices.SortStableFunc(row, func(a, b int32) int {
			ga, gb := groupRank[a], groupRank[b]
			if ga != gb {
				ma, mb := groupSum[ga]/float64(groupCount[ga]), groupSum[gb]/float64(groupCount[gb])
				if c := cmp.Compare(ma, mb); c != 0 {
					return c
				}
				return cmp.Compare(ga, gb)
			}
			return cmp.Compare(bary[a], bary[b])
		})
		for r, v := range row {
			pos[v] = float64(r+1) / float64(len(row)+1)
		}
	}
	for range o.Sweeps {
		for l := 1; l < layers; l++ {
			sortRow(rows[l], predOf)
		}
		for l := layers - 2; l >= 0; l-- {
			sortRow(rows[l], succOf)
		}
	}
	return place2D(g, o, layer, rows, from, to)
}

// titleSpace is the room left above the drawing for the title of a group
// whose box is at the top.
const titleSpace = 16

// place2D turns layers and rows into pixels: each layer a column, centred
// vertically on the tallest. Where a layer passes from one group to
// another, the next group's box gets titleSpace above it for its title,
// so no title lies on the box above.
func place2D(g Graph, o Options, layer []int32, rows [][]int32, from, to []int32) (*Result, error) {
	step := o.NodeHeight + o.RowGap
	offsets := make([][]int, len(rows))
	heights := make([]int, len(rows))
	tallest := 0
	for l, row := range rows {
		offsets[l] = make([]int, len(row))
		y := 0
		for r, v := range row {
			if r > 0 && g.Nodes[v].Group != g.Nodes[row[r-1]].Group {
				y += titleSpace
			}
			offsets[l][r] = y
			y += step
		}
		heights[l] = y
		tallest = max(tallest, y)
	}
	res := &Result{Nodes: make([]Pos, len(g.Nodes)), Lines: make([]Line, len(g.Edges)), Layers: len(rows)}
	for l, row := range rows {
		top := (tallest - heights[l]) / 2
		for r, v := range row {
			res.Nodes[v] = Pos{ID: g.Nodes[v].ID, Group: g.Nodes[v].Group, Layer: l, Row: r,
				X: o.LayerGap/2 + l*(o.NodeWidth+o.LayerGap), Y: titleSpace + o.RowGap + top + offsets[l][r], W: o.NodeWidth, H: o.NodeHeight}
		}
	}
	for k, e := range g.Edges {
		a, b := res.Nodes[from[k]], res.Nodes[to[k]]
		kind := e.Kind
		if kind == "" {
			kind = EdgeDepends
		}
		res.Lines[k] = Line{From: e.From, To: e.To, Kind: kind, Label: e.Label,
			X1: a.X + a.W, Y1: a.Y + a.H/2, X2: b.X, Y2: b.Y + b.H/2}
	}
	boxes := map[string]int{}
	pad := o.RowGap / 2
	for _, p := range res.Nodes {
		if p.Group == "" {
			continue
		}
		i, ok := boxes[p.Group]
		if !ok {
			boxes[p.Group] = len(res.Boxes)
			res.Boxes = append(res.Boxes, Box{Group: p.Group, X: p.X - pad, Y: p.Y - pad, W: p.W + 2*pad, H: p.H + 2*pad})
			continue
		}
		b := &res.Boxes[i]
		x2, y2 := max(b.X+b.W, p.X+p.W+pad), max(b.Y+b.H, p.Y+p.H+pad)
		b.X, b.Y = min(b.X, p.X-pad), min(b.Y, p.Y-pad)
		b.W, b.H = x2-b.X, y2-b.Y
	}
	res.Width = o.LayerGap + len(rows)*(o.NodeWidth+o.LayerGap)
	res.Height = titleSpace + 2*o.RowGap + tallest
	return res, nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions
	if o.NodeWidth > 0 {
		d.NodeWidth = o.NodeWidth
	}
	if o.NodeHeight > 0 {
		d.NodeHeight = o.NodeHeight
	}
	if o.LayerGap > 0 {
		d.LayerGap = o.LayerGap
	}
	if o.RowGap > 0 {
		d.RowGap = o.RowGap
	}
	if o.Sweeps > 0 {
		d.Sweeps = o.Sweeps
	}
	return d
}
