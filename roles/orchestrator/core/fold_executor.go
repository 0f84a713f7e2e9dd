package core

import "github.com/agentic-dev/agentic/bus/event"

// foldExecutorOnline records an executor's capacity and capabilities under
// its node id (the signer). A restart announces a new incarnation with the
// same id: it takes work again, whatever became of the one before. A
// repeated announcement of the same incarnation keeps what the membership
// and the operators said of it (gone, draining).
func foldExecutorOnline(s *State, ev event.Event) {
	var d event.ExecutorOnlineData
	if !s.decode(ev, &d) {
		return
	}
	if ev.Node == "" {
		s.Ignored++
		return
	}
	ex := &Executor{Slots: d.Slots, Queue: max(d.Queue, 0), Capabilities: d.Capabilities, Version: d.Version,
		Incarnation: d.Incarnation, Since: ev.Time}
	if old := s.Executors[ev.Node]; old != nil && old.Incarnation == d.Incarnation {
		ex.Gone, ex.Draining = old.Gone, old.Draining
	}
	if n := s.Nodes[ev.Node]; n != nil && n.Incarnation == d.Incarnation && (n.State == NodeFailed || n.State == NodeLeft) {
		ex.Gone = n.State // announced late, by a process the membership has seen go
	}
	s.Executors[ev.Node] = ex
	s.executorsChanged(ev.Node)
}

// executorsChanged recomputes what depends on the set of executors and
// their capacity: the slots of node (reslot) and the wait reasons of steps
// that require capabilities.
func (s *State) executorsChanged(node string) {
	s.touchNode(node)
	s.refreshWaits()
}
