package core

import (
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// Step defaults (docs/improve.md): a plan family's default timeout and
// retries are cluster settings that approved proposals change
// (tuning.changed). The fold keeps them in State.Tuning — the same pure
// fold (roles/improve) every node runs, which takes a tuning.changed only
// for an approved proposal — and a plan's steps that set no timeout or
// retries get the defaults of its family when the plan is folded, so a
// replay gives the same steps.

// foldTuning folds the events of proposals and the settings they change.
func foldTuning(s *State, ev event.Event) {
	if s.Tuning == nil {
		s.Tuning = tuning.NewState()
	}
	// The leader's events are fenced by the epoch in force, which the
	// core folds (leader.elected).
	s.Tuning.Epoch = max(s.Tuning.Epoch, s.Epoch)
	s.Tuning.Apply(ev)
}
