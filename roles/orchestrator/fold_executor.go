package orchestrator

import "github.com/agentic-dev/agentic/bus/event"

// foldExecutorOnline records an executor's capacity under its node id (the
// signer). A restart announces a new incarnation with the same id.
func foldExecutorOnline(s *State, ev event.Event) {
	var d event.ExecutorOnlineData
	if !s.decode(ev, &d) {
		return
	}
	if ev.Node == "" {
		s.Ignored++
		return
	}
	s.Executors[ev.Node] = &Executor{Slots: d.Slots, Incarnation: d.Incarnation, Since: ev.Time}
}
