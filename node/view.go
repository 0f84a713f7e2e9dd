package node

import (
	"sync"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator"
)

// runViews is the node's read model of runs for the API and the UI. On a
// node with the orchestrator role it reads the orchestrator's own state
// (folding the same events twice would be wasted work on the hot path);
// elsewhere a viewState folds it.
type runViews struct {
	read func(f func(s *orchestrator.State))
}

// Runs returns the runs, newest first.
func (v runViews) Runs(status string, limit int) []orchestrator.RunView {
	var out []orchestrator.RunView
	v.read(func(s *orchestrator.State) { out = s.RunsView(status, limit) })
	return out
}

// Run returns one run by id or unique prefix.
func (v runViews) Run(id string) (orchestrator.RunView, error) {
	var out orchestrator.RunView
	var err error
	v.read(func(s *orchestrator.State) {
		var r *orchestrator.Run
		if r, err = s.Run(id); err == nil {
			out = r.View()
		}
	})
	return out, err
}

// viewState folds the orchestrator's pure state on a ledger node without
// the orchestrator role, under a read-write lock.
type viewState struct {
	mu    sync.RWMutex
	state *orchestrator.State
}

func newViewState() *viewState { return &viewState{state: orchestrator.NewState()} }

// Fold applies a committed event.
func (v *viewState) Fold(ev event.Event) {
	v.mu.Lock()
	v.state.Apply(ev)
	v.mu.Unlock()
}

// Settled does nothing.
func (v *viewState) Settled(bool) {}

func (v *viewState) read(f func(s *orchestrator.State)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	f(v.state)
}

// SnapshotName is "runs-view".
func (v *viewState) SnapshotName() string { return "runs-view" }

// Snapshot returns the state as of the last folded event.
func (v *viewState) Snapshot() (uint64, []byte, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	b, err := v.state.MarshalSnapshot()
	return v.state.Seq, b, err
}

// Restore replaces the state with a snapshot.
func (v *viewState) Restore(data []byte) error {
	s, err := orchestrator.UnmarshalSnapshot(data)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.state = s
	v.mu.Unlock()
	return nil
}
