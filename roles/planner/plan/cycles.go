package plan

import (
	"fmt"
	"slices"
	"strings"
)

// reportCycles reports one cycle per strongly connected component of adj
// that has one, as "cycle: a -> b -> a" where "->" reads "depends on", at
// the reference that starts it. It reports whether there was any.
func (g *graph) reportCycles(adj [][]edge, prefix string, name func(int) string) bool {
	found := false
	for _, comp := range components(adj) {
		if len(comp) < 2 {
			continue
		}
		found = true
		nodes, at := shortestCycle(adj, comp)
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = name(n)
		}
		if len(names) > 21 {
			names = append(append(names[:10:10], fmt.Sprintf("... (%d more)", len(names)-20)), names[len(names)-10:]...)
		}
		g.ps.add(at, "cycle: %s%s", prefix, strings.Join(names, " -> "))
	}
	return found
}

// components returns the strongly connected components of adj (Tarjan),
// each sorted by node, ordered by their smallest node.
func components(adj [][]edge) [][]int {
	n := len(adj)
	index := make([]int, n) // 0: unvisited; else visit order + 1
	low := make([]int, n)
	onStack := make([]bool, n)
	var stack []int
	var out [][]int
	next := 1
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range adj[v] {
			switch {
			case index[e.to] == 0:
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			case onStack[e.to]:
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		out = append(out, comp)
	}
	for v := range n {
		if index[v] == 0 {
			visit(v)
		}
	}
	for _, c := range out {
		slices.Sort(c)
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// shortestCycle returns a shortest cycle through the smallest node of the
// strongly connected component comp, as nodes from that node back to it,
// and the position of its first edge.
func shortestCycle(adj [][]edge, comp []int) ([]int, pos) {
	in := make(map[int]bool, len(comp))
	for _, v := range comp {
		in[v] = true
	}
	start := comp[0]
	parent := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range adj[u] {
			if e.to == start {
				path := []int{start}
				for v := u; v != start; v = parent[v] {
					path = append(path, v)
				}
				slices.Reverse(path[1:])
				path = append(path, start)
				return path, firstEdge(adj, path)
			}
			if _, done := parent[e.to]; done || !in[e.to] {
				continue
			}
			parent[e.to] = u
			queue = append(queue, e.to)
		}
	}
	panic("plan: strongly connected component without a cycle") // unreachable: comp has ≥ 2 nodes
}

func firstEdge(adj [][]edge, path []int) pos {
	for _, e := range adj[path[0]] {
		if e.to == path[1] {
			return e.at
		}
	}
	return pos{}
}
