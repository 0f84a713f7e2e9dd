package executor

import "errors"

// Checkpoint writes a consistent copy of the executor's local state (its
// attempt records) into dir, which must not exist (a node backup).
func (e *Executor) Checkpoint(dir string) error {
	if !e.started || e.state == nil {
		return errors.New("executor: checkpoint: not started")
	}
	return e.state.Checkpoint(dir)
}
