package orchestrator

// The one place where typed statuses meet the strings the protocol carries
// (run.finished's status, task.finished's outcome) and the views show. The
// strings are the same as the typed values; what a conversion adds is the
// check against this version's tables.

// runStatusFromWire reads a run status from an event; ok is false for a
// status this version's table does not know.
func runStatusFromWire(s string) (st RunStatus, ok bool) {
	st = RunStatus(s)
	return st, st.Known()
}

// taskStatusFromWire reads an attempt's outcome from task.finished; ok is
// false for a status this version's table does not know.
func taskStatusFromWire(s string) (st TaskStatus, ok bool) {
	st = TaskStatus(s)
	return st, st.Known()
}

// wire is the run status as events and views carry it.
func (s RunStatus) wire() string { return string(s) }

// wire is the step status as views carry it.
func (s StepStatus) wire() string { return string(s) }

// codeFromWire reads a run.finished's code. A code this version does not
// know (a newer leader's) is kept as it is: codes are only ever added.
func codeFromWire(s string) Code { return Code(s) }

// wire is the code as events and views carry it.
func (c Code) wire() string { return string(c) }
