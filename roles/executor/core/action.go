package core

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Action is what Step asks the shell to do. The shell carries out a
// Step's actions in order.
type Action interface {
	action()
	fmt.Stringer
}

// Ack acknowledges the message at stream sequence Seq.
type Ack struct{ Seq uint64 }

// Nak gives the message at Seq back to the server: after a delay when
// Later (no room for it now), at once otherwise (Release).
type Nak struct {
	Seq   uint64
	Later bool
}

// Term terminates the message at Seq: it is never delivered again.
type Term struct{ Seq uint64 }

// Hold keeps the message at Seq unacknowledged, unread: the executor
// halted; Release gives it back (Nak).
type Hold struct{ Seq uint64 }

// Touch keeps the held messages at Seqs from being delivered again
// (InProgress).
type Touch struct{ Seqs []uint64 }

// DoubleAck acknowledges the drain at Seq and waits for the server's
// answer.
type DoubleAck struct{ Seq uint64 }

// RecordStarted records Start and Ahead started at At, in one synced
// commit, and then — only if it succeeded — starts Start's processes.
// Answer: Recorded{ID}.
type RecordStarted struct {
	ID    uint64
	Start []Attempt
	Ahead []Attempt
	At    time.Time
}

// StartRecorded starts the process of an attempt recorded ahead at At.
type StartRecorded struct {
	Attempt Attempt
	At      time.Time
}

// RecordDropped records the attempts dropped (synced): they never run.
// Answer: Recorded{ID}.
type RecordDropped struct {
	ID       uint64
	Attempts []Key
}

// RecordEpochs records the elections of the message at Seq (synced).
// Answer: Recorded{ID}.
type RecordEpochs struct {
	ID     uint64
	Seq    uint64
	Epochs []uint64
}

// RecordDrained records the drain at Seq completed (synced). Answer:
// Recorded{ID}.
type RecordDrained struct {
	ID  uint64
	Seq uint64
}

// RunNoops runs noop attempts and emits their task.started and
// task.finished (synced). Answer: Recorded{ID}.
type RunNoops struct {
	ID       uint64
	Attempts []Attempt
}

// Forget deletes the records of attempts recorded ahead that never
// started, so that their assignments run at the next start.
type Forget struct{ Attempts []Key }

// Kill cancels a running attempt for an operator's (leader's) task.cancel:
// its process group is killed and it is reported cancelled.
type Kill struct {
	Key Key
	Why string
}

// CancelledBeforeStart reports an attempt cancelled before its process
// started as cancelled. Finish: it was recorded started (ahead), so its
// record is marked finished once the result is in the outbox, and
// Reported answers.
type CancelledBeforeStart struct {
	Attempt Attempt
	Why     string
	Finish  bool
}

// Drained closes Drained: the drain completed.
type Drained struct{}

// WatchBacklog starts a watcher of the backlog of arm Gen (BacklogRead).
type WatchBacklog struct{ Gen int }

// Recreate makes the lost consumer again; its backlog is arm Gen.
// Answer: Recreated.
type Recreate struct{ Gen int }

// Log is a line for the executor's log.
type Log struct {
	Level slog.Level
	Msg   string
	Args  []any
}

func (Ack) action()                  {}
func (Nak) action()                  {}
func (Term) action()                 {}
func (Hold) action()                 {}
func (Touch) action()                {}
func (DoubleAck) action()            {}
func (RecordStarted) action()        {}
func (StartRecorded) action()        {}
func (RecordDropped) action()        {}
func (RecordEpochs) action()         {}
func (RecordDrained) action()        {}
func (RunNoops) action()             {}
func (Forget) action()               {}
func (Kill) action()                 {}
func (CancelledBeforeStart) action() {}
func (Drained) action()              {}
func (WatchBacklog) action()         {}
func (Recreate) action()             {}
func (Log) action()                  {}

// String is the action as the golden scripts print it.
func (a Ack) String() string { return fmt.Sprintf("ack %d", a.Seq) }

// String is the action as the golden scripts print it.
func (a Term) String() string { return fmt.Sprintf("term %d", a.Seq) }

// String is the action as the golden scripts print it.
func (a Hold) String() string { return fmt.Sprintf("hold %d", a.Seq) }

// String is the action as the golden scripts print it.
func (a Nak) String() string {
	if a.Later {
		return fmt.Sprintf("nak %d later", a.Seq)
	}
	return fmt.Sprintf("nak %d", a.Seq)
}

// String is the action as the golden scripts print it.
func (a Touch) String() string { return "touch " + seqs(a.Seqs) }

// String is the action as the golden scripts print it.
func (a DoubleAck) String() string { return fmt.Sprintf("doubleack %d", a.Seq) }

// String is the action as the golden scripts print it.
func (a RecordStarted) String() string {
	s := fmt.Sprintf("record#%d started start=[%s]", a.ID, attempts(a.Start))
	if len(a.Ahead) > 0 {
		s += " ahead=[" + attempts(a.Ahead) + "]"
	}
	return s
}

// String is the action as the golden scripts print it.
func (a StartRecorded) String() string {
	return "start " + a.Attempt.Key().String() + " (recorded ahead)"
}

// String is the action as the golden scripts print it.
func (a RecordDropped) String() string {
	return fmt.Sprintf("record#%d dropped [%s]", a.ID, keys(a.Attempts))
}

// String is the action as the golden scripts print it.
func (a RecordEpochs) String() string {
	return fmt.Sprintf("record#%d epochs %s at %d", a.ID, seqs(a.Epochs), a.Seq)
}

// String is the action as the golden scripts print it.
func (a RecordDrained) String() string { return fmt.Sprintf("record#%d drained %d", a.ID, a.Seq) }

// String is the action as the golden scripts print it.
func (a RunNoops) String() string {
	return fmt.Sprintf("record#%d noops [%s]", a.ID, attempts(a.Attempts))
}

// String is the action as the golden scripts print it.
func (a Forget) String() string { return "forget [" + keys(a.Attempts) + "]" }

// String is the action as the golden scripts print it.
func (a Kill) String() string { return "kill " + a.Key.String() + " (" + a.Why + ")" }

// String is the action as the golden scripts print it.
func (a CancelledBeforeStart) String() string {
	s := "cancelled " + a.Attempt.Key().String() + " before start (" + a.Why + ")"
	if a.Finish {
		s += " finish"
	}
	return s
}

// String is the action as the golden scripts print it.
func (Drained) String() string { return "drained" }

// String is the action as the golden scripts print it.
func (a WatchBacklog) String() string { return fmt.Sprintf("watch backlog gen=%d", a.Gen) }

// String is the action as the golden scripts print it.
func (a Recreate) String() string { return fmt.Sprintf("recreate consumer gen=%d", a.Gen) }

// String is the action as the golden scripts print it.
func (a Log) String() string { return "log: " + a.Msg }

func seqs(s []uint64) string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprint(v)
	}
	return strings.Join(out, ",")
}

func attempts(as []Attempt) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Key().String()
	}
	return strings.Join(out, " ")
}

func keys(ks []Key) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return strings.Join(out, " ")
}
