package core

import "github.com/agentic-dev/agentic/bus/event"

// The one place where the orchestrator's lifecycle statuses meet the
// protocol's (bus/event: the status of run.finished, the outcome of
// task.finished, the statuses views show). Their values are the same
// strings; what a conversion adds is the check against this version's
// tables, whose statuses (steps waiting at a gate, for one) the protocol
// may not carry yet.

// runStatusFromWire reads a run status from an event; ok is false for a
// status this version's table does not know.
func runStatusFromWire(s event.RunStatus) (st RunStatus, ok bool) {
	st = RunStatus(s)
	return st, st.Known()
}

// taskStatusFromWire reads an attempt's outcome from task.finished; ok is
// false for a status this version's table does not know.
func taskStatusFromWire(s event.TaskStatus) (st TaskStatus, ok bool) {
	st = TaskStatus(s)
	return st, st.Known()
}

// Wire is the run status as events and views carry it.
func (s RunStatus) Wire() event.RunStatus { return event.RunStatus(s) }

// Wire is the step status as views carry it.
func (s StepStatus) Wire() string { return string(s) }

// codeFromWire reads a run.finished's code. A code this version does not
// know (a newer leader's) is kept as it is: codes are only ever added.
func codeFromWire(s string) Code { return Code(s) }

// Wire is the code as events and views carry it.
func (c Code) Wire() string { return string(c) }
