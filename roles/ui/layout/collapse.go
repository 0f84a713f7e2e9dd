package layout

import (
	"fmt"
	"strconv"
)

// DefaultThreshold is the number of nodes above which the run page
// collapses fan-out (Collapse).
const DefaultThreshold = 300

// GroupPrefix starts the id of a collapsed node: "group/" and the id of its
// first member. Step ids cannot hold a '/', so it names no step.
const GroupPrefix = "group/"

// Collapsed is a graph whose fan-out was grouped, and which node holds
// which of the original ones.
type Collapsed struct {
	Graph Graph
	// Members lists, for each collapsed node (id with GroupPrefix), the
	// nodes it holds, in graph order.
	Members map[string][]string
	// Of maps every original node to the node that stands for it (itself
	// when it was not grouped).
	Of map[string]string
}

// Collapse groups the nodes of g when it has more than threshold of them:
// the nodes of one group whose shapes are equal (shape[id]; the memory
// role's command shapes, say) and that sit in the same layer become one
// node. Nodes of one layer have no edge between them, so the result is
// acyclic too; edges between grouped nodes are kept once per kind. At or
// below the threshold g comes back unchanged.
func Collapse(g Graph, shape map[string]string, threshold int) (Collapsed, error) {
	c := Collapsed{Graph: g, Members: map[string][]string{}, Of: make(map[string]string, len(g.Nodes))}
	if len(g.Nodes) <= threshold {
		for _, v := range g.Nodes {
			c.Of[v.ID] = v.ID
		}
		return c, nil
	}
	layer, err := Layers(g)
	if err != nil {
		return Collapsed{}, err
	}
	type key struct {
		group, shape string
		layer        int
	}
	byKey := map[key][]string{}
	var keys []key
	for i, v := range g.Nodes {
		k := key{v.Group, shape[v.ID], layer[i]}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], v.ID)
	}
	var out Graph
	for _, k := range keys {
		ms := byKey[k]
		id := ms[0]
		if len(ms) > 1 {
			id = GroupPrefix + ms[0]
			c.Members[id] = ms
		}
		for _, m := range ms {
			c.Of[m] = id
		}
		out.Nodes = append(out.Nodes, Node{ID: id, Group: k.group})
	}
	type ekey struct {
		from, to string
		kind     EdgeKind
	}
	seen := map[ekey]bool{}
	for _, e := range g.Edges {
		k := ekey{c.Of[e.From], c.Of[e.To], e.Kind}
		if seen[k] {
			continue
		}
		seen[k] = true
		out.Edges = append(out.Edges, Edge{From: k.from, To: k.to, Kind: e.Kind, Label: e.Label})
	}
	c.Graph = out
	return c, nil
}

// Layers returns each node's layer (the longest path to it from a source),
// in the order of g.Nodes.
func Layers(g Graph) ([]int, error) {
	index := make(map[string]int, len(g.Nodes))
	for i, v := range g.Nodes {
		if _, dup := index[v.ID]; dup {
			return nil, fmt.Errorf("layout: node %q appears twice", v.ID)
		}
		index[v.ID] = i
	}
	succ := make([][]int, len(g.Nodes))
	waiting := make([]int, len(g.Nodes))
	for _, e := range g.Edges {
		a, okA := index[e.From]
		b, okB := index[e.To]
		if !okA || !okB {
			return nil, fmt.Errorf("layout: edge %s→%s names a node the graph does not have", e.From, e.To)
		}
		succ[a] = append(succ[a], b)
		waiting[b]++
	}
	layer := make([]int, len(g.Nodes))
	var queue []int
	for i, w := range waiting {
		if w == 0 {
			queue = append(queue, i)
		}
	}
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		for _, w := range succ[v] {
			layer[w] = max(layer[w], layer[v]+1)
			if waiting[w]--; waiting[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	if len(queue) != len(g.Nodes) {
		return nil, fmt.Errorf("%w: %s nodes are on or after one", ErrCycle, strconv.Itoa(len(g.Nodes)-len(queue)))
	}
	return layer, nil
}
