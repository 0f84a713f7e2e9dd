package orchestrator

import "github.com/agentic-dev/agentic/bus/event"

// foldLeaderElected raises the epoch. An election older than the current
// epoch is a stale decision and counted as fenced; one for the current epoch
// is a duplicate.
func foldLeaderElected(s *State, ev event.Event) {
	var d event.LeaderElectedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	if d.Epoch == s.Epoch {
		s.Ignored++
		return
	}
	s.Epoch = d.Epoch
	s.Leader = d.Leader
}
