package plan

import "container/heap"

// order returns the steps in topological order (dependencies first),
// stable: among steps that are ready together, declaration order wins.
// The graph must be acyclic.
func (g *graph) order() []int {
	n := len(g.deps)
	unmet := make([]int, n)
	dependents := make([][]int, n)
	for i, es := range g.deps {
		unmet[i] = len(es)
		for _, e := range es {
			dependents[e.to] = append(dependents[e.to], i)
		}
	}
	ready := &intHeap{}
	for i := range n {
		if unmet[i] == 0 {
			ready.items = append(ready.items, i)
		}
	}
	heap.Init(ready)
	out := make([]int, 0, n)
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, i)
		for _, d := range dependents[i] {
			if unmet[d]--; unmet[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	return out
}

// intHeap is a min-heap of ints for container/heap.
type intHeap struct{ items []int }

func (h *intHeap) Len() int           { return len(h.items) }
func (h *intHeap) Less(i, j int) bool { return h.items[i] < h.items[j] }
func (h *intHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *intHeap) Push(x any)         { h.items = append(h.items, x.(int)) }
func (h *intHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
