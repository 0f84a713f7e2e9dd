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
// Each group is drawn as a band: a box over the layers of its nodes,
// placed below whatever already occupies those layers, so no two boxes
// overlap.
//
// Collapse groups fan-out and long chains: above a threshold, the nodes
// of one group, one shape and one layer become a single node that counts
// its members, and so does a chain of one group's nodes, so a plan of
// 5,000 steps draws as a few dozen boxes.
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

// titleSpace is the room left above a group's box for its title.
const titleSpace = 16

// block is what place2D stacks: a group's nodes (drawn in a box), or the
// nodes of one layer that are in no group.
type block struct {
	group string
	boxed bool
	// lo and hi are its first and last layer; rows its nodes in each of
	// them, in the order the sweeps left them.
	lo, hi int
	rows   map[int][]int32
	// height is its most nodes in one layer; key orders the blocks (the
	// mean of its nodes' places in their layers), first breaks ties.
	height int
	key    float64
	first  int32
}

// place2D turns layers and rows into pixels: each layer a column. Each
// group is a band: a rectangle over the layers from its first to its
// last, as tall as its largest layer, placed below whatever already
// occupies any of those columns (a skyline), with room above it for its
// title; the nodes of a layer that are in no group form a band of one
// column, unboxed. Bands are placed in the order of their nodes' mean
// places after the sweeps, so no two group boxes overlap, no title lies
// on another box, no node lies in a box not its own, and subgoals that
// follow one another share the same rows.
func place2D(g Graph, o Options, layer []int32, rows [][]int32, from, to []int32) (*Result, error) {
	step := o.NodeHeight + o.RowGap
	pad := o.RowGap / 2
	var blocks []*block
	byGroup := map[string]*block{}
	sums := map[*block]float64{}
	counts := map[*block]int{}
	for l, row := range rows {
		loose := (*block)(nil)
		for r, v := range row {
			grp := g.Nodes[v].Group
			b := byGroup[grp]
			if grp == "" {
				b = loose
			}
			if b == nil {
				b = &block{group: grp, boxed: grp != "", lo: l, hi: l, rows: map[int][]int32{}, first: v}
				blocks = append(blocks, b)
				if grp == "" {
					loose = b
				} else {
					byGroup[grp] = b
				}
			}
			b.hi = l
			b.rows[l] = append(b.rows[l], v)
			b.height = max(b.height, len(b.rows[l]))
			b.first = min(b.first, v)
			sums[b] += float64(r+1) / float64(len(row)+1)
			counts[b]++
		}
	}
	for _, b := range blocks {
		b.key = sums[b] / float64(counts[b])
	}
	slices.SortStableFunc(blocks, func(a, b *block) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.first, b.first)
	})
	res := &Result{Nodes: make([]Pos, len(g.Nodes)), Lines: make([]Line, len(g.Edges)), Layers: len(rows)}
	colX := func(l int) int { return o.LayerGap/2 + l*(o.NodeWidth+o.LayerGap) }
	skyline := make([]int, len(rows))
	for l := range skyline {
		skyline[l] = o.RowGap
	}
	boxAt := map[string]Box{}
	for _, b := range blocks {
		top := slices.Max(skyline[b.lo : b.hi+1])
		y := top
		if b.boxed {
			y += titleSpace + pad
		}
		for l := b.lo; l <= b.hi; l++ {
			ms := b.rows[l]
			off := (b.height - len(ms)) * step / 2
			for i, v := range ms {
				res.Nodes[v] = Pos{ID: g.Nodes[v].ID, Group: g.Nodes[v].Group, Layer: l,
					X: colX(l), Y: y + off + i*step, W: o.NodeWidth, H: o.NodeHeight}
			}
		}
		bottom := y + b.height*step - o.RowGap
		if b.boxed {
			boxAt[b.group] = Box{Group: b.group, X: colX(b.lo) - pad, Y: y - pad,
				W: colX(b.hi) - colX(b.lo) + o.NodeWidth + 2*pad, H: bottom - y + 2*pad}
			bottom += pad
		}
		for l := b.lo; l <= b.hi; l++ {
			skyline[l] = bottom + pad
			if !b.boxed {
				skyline[l] = bottom + o.RowGap
			}
		}
	}
	// A node's row is its place from the top in its layer.
	for _, row := range rows {
		byY := slices.Clone(row)
		slices.SortStableFunc(byY, func(a, b int32) int { return cmp.Compare(res.Nodes[a].Y, res.Nodes[b].Y) })
		for r, v := range byY {
			res.Nodes[v].Row = r
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
	seen := map[string]bool{}
	for _, v := range g.Nodes {
		if bx, ok := boxAt[v.Group]; ok && !seen[v.Group] {
			seen[v.Group] = true
			res.Boxes = append(res.Boxes, bx)
		}
	}
	res.Width = o.LayerGap + len(rows)*(o.NodeWidth+o.LayerGap)
	res.Height = slices.Max(append(skyline, 0)) + o.RowGap
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
