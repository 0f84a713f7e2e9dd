package core

import "github.com/agentic-dev/agentic/bus/event"

// foldLeaderElected accepts an election only with an epoch strictly newer
// than the one in force, which makes its leader the one in force. An older
// election is a stale decision, counted in State.Fenced. One at the epoch
// in force is counted in State.Ignored and changes nothing: a duplicate,
// or a second winner that picked the same epoch before it had folded the
// first one's election (epochs come from the ledger, and two successive
// lease winners may read the same one). The first election recorded keeps
// the epoch; the second winner sees another leader at its epoch, gives the
// lease up and competes again (lease.go), so two winners never both lead.
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
