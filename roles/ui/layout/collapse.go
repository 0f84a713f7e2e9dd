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

// DefaultMinChain is the shortest chain Collapse draws as one node.
const DefaultMinChain = 8

// Collapsed is a graph whose fan-out and long chains were grouped, and
// which node holds which of the original ones.
type Collapsed struct {
	Graph Graph
	// Members lists, for each collapsed node (id with GroupPrefix), the
	// nodes it holds, in graph order (a chain's in its order).
	Members map[string][]string
	// Chain marks the collapsed nodes that are chains.
	Chain map[string]bool
	// Of maps every original node to the node that stands for it (itself
	// when it was not grouped).
	Of map[string]string
}

// Grouping says what CollapseBy groups.
type Grouping struct {
	// Threshold is the number of nodes at or under which nothing is
	// grouped.
	Threshold int
	// MinChain is the shortest chain grouped (0: DefaultMinChain).
	MinChain int
	// Keep are nodes never grouped: an expanded group's members.
	Keep map[string]bool
}

// Collapse is CollapseBy with the default chain length and nothing kept.
func Collapse(g Graph, shape map[string]string, threshold int) (Collapsed, error) {
	return CollapseBy(g, shape, Grouping{Threshold: threshold})
}

// CollapseBy groups the nodes of g when it has more than gr.Threshold of
// them, in two passes. First chains: a path of at least MinChain nodes of
// one group, each the only dependant of the one before and the only
// dependency of the one after, becomes one node (a chain of 3,000 steps
// draws as one box, not 3,000 columns). Then fan-out: the nodes of one
// group whose shapes are equal (shape[id]; the memory role's command
// shapes, say) and that sit in the same layer become one node. Both keep
// the graph acyclic: a chain's inner nodes have no other edge, and nodes
// of one layer have none between them. Edges between grouped nodes are
// kept once per kind. At or below the threshold g comes back unchanged.
func CollapseBy(g Graph, shape map[string]string, gr Grouping) (Collapsed, error) {
	c := Collapsed{Graph: g, Members: map[string][]string{}, Chain: map[string]bool{}, Of: make(map[string]string, len(g.Nodes))}
	if len(g.Nodes) <= gr.Threshold {
		for _, v := range g.Nodes {
			c.Of[v.ID] = v.ID
		}
		return c, nil
	}
	if gr.MinChain <= 0 {
		gr.MinChain = DefaultMinChain
	}
	chained, err := collapseChains(g, gr, c)
	if err != nil {
		return Collapsed{}, err
	}
	layer, err := Layers(chained)
	if err != nil {
		return Collapsed{}, err
	}
	type key struct {
		group, shape string
		layer        int
	}
	byKey := map[key][]string{}
	var keys []key
	for i, v := range chained.Nodes {
		k := key{v.Group, shape[v.ID], layer[i]}
		if c.Chain[v.ID] || gr.Keep[v.ID] {
			k.shape = "\x00" + v.ID // drawn alone
		}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], v.ID)
	}
	of := make(map[string]string, len(chained.Nodes))
	var out Graph
	for _, k := range keys {
		ms := byKey[k]
		id := ms[0]
		if len(ms) > 1 {
			id = GroupPrefix + ms[0]
			c.Members[id] = ms
		}
		for _, m := range ms {
			of[m] = id
		}
		out.Nodes = append(out.Nodes, Node{ID: id, Group: k.group})
	}
	for orig, in := range c.Of {
		c.Of[orig] = of[in]
	}
	c.Graph = Graph{Nodes: out.Nodes, Edges: mapEdges(chained.Edges, of)}
	return c, nil
}

// mapEdges maps each edge's ends through of, keeping one edge per pair
// and kind and dropping the ones inside a node.
func mapEdges(edges []Edge, of map[string]string) []Edge {
	type ekey struct {
		from, to string
		kind     EdgeKind
	}
	seen := make(map[ekey]bool, len(edges))
	out := make([]Edge, 0, len(edges))
	for _, e := range edges {
		k := ekey{of[e.From], of[e.To], e.Kind}
		if k.from == k.to || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Edge{From: k.from, To: k.to, Kind: e.Kind, Label: e.Label})
	}
	return out
}

// collapseChains replaces the chains of g by one node each, recording
// them in c (Members, Chain, Of), and returns the graph with them.
func collapseChains(g Graph, gr Grouping, c Collapsed) (Graph, error) {
	index := make(map[string]int, len(g.Nodes))
	for i, v := range g.Nodes {
		if _, dup := index[v.ID]; dup {
			return Graph{}, fmt.Errorf("layout: node %q appears twice", v.ID)
		}
		index[v.ID] = i
	}
	// The one distinct successor and predecessor of each node (-1: none,
	// -2: several).
	next := make([]int, len(g.Nodes))
	prev := make([]int, len(g.Nodes))
	for i := range next {
		next[i], prev[i] = -1, -1
	}
	one := func(slot *int, v int) {
		switch *slot {
		case -1:
			*slot = v
		case v, -2:
		default:
			*slot = -2
		}
	}
	for _, e := range g.Edges {
		a, okA := index[e.From]
		b, okB := index[e.To]
		if !okA || !okB {
			return Graph{}, fmt.Errorf("layout: edge %s→%s names a node the graph does not have", e.From, e.To)
		}
		one(&next[a], b)
		one(&prev[b], a)
	}
	// links reports whether v's chain goes on to its successor.
	links := func(v int) bool {
		w := next[v]
		return w >= 0 && prev[w] == v && w != v && g.Nodes[w].Group == g.Nodes[v].Group &&
			!gr.Keep[g.Nodes[v].ID] && !gr.Keep[g.Nodes[w].ID]
	}
	// Walk each chain from its first node; a long one gets an id.
	chainOf := make([]string, len(g.Nodes))
	for i, v := range g.Nodes {
		if p := prev[i]; p >= 0 && links(p) {
			continue // not a chain's first node
		}
		members := []int{i}
		for w := i; links(w); {
			w = next[w]
			members = append(members, w)
		}
		if len(members) < gr.MinChain {
			continue
		}
		id := GroupPrefix + v.ID
		c.Chain[id] = true
		for _, m := range members {
			chainOf[m] = id
			c.Members[id] = append(c.Members[id], g.Nodes[m].ID)
		}
	}
	if len(c.Chain) == 0 {
		for _, v := range g.Nodes {
			c.Of[v.ID] = v.ID
		}
		return g, nil
	}
	// The graph in its order, a chain where its first member in that
	// order was.
	of := make(map[string]string, len(g.Nodes))
	var out Graph
	for i, v := range g.Nodes {
		id := chainOf[i]
		if id == "" {
			of[v.ID] = v.ID
			out.Nodes = append(out.Nodes, v)
			continue
		}
		if _, placed := of[c.Members[id][0]]; !placed {
			for _, m := range c.Members[id] {
				of[m] = id
			}
			out.Nodes = append(out.Nodes, Node{ID: id, Group: v.Group})
		}
	}
	for id, in := range of {
		c.Of[id] = in
	}
	out.Edges = mapEdges(g.Edges, of)
	return out, nil
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
