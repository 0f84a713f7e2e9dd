package core

import (
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Key names one attempt of one step of one run.
type Key struct {
	Run     string
	Step    string
	Attempt int
}

// String is "run/step/attempt".
func (k Key) String() string { return k.Run + "/" + k.Step + "/" + strconv.Itoa(k.Attempt) }

// Attempt is an assigned attempt: its run and its assignment.
type Attempt struct {
	Run  string
	Data event.TaskAssignedData
}

// Key is the attempt's key.
func (a Attempt) Key() Key { return Key{Run: a.Run, Step: a.Data.Step.ID, Attempt: a.Data.Attempt} }

// Noop reports whether the attempt is a noop step: it takes no slot and
// keeps no local record.
func (a Attempt) Noop() bool { return a.Data.Step.Kind == event.KindNoop }

// Input is what the shell hands Step.
type Input interface{ input() }

// Kind is what a delivered message carries.
type Kind int

// The kinds of delivered messages.
const (
	// KindOther is a message the executor does not act on: acknowledged.
	KindOther Kind = iota
	// KindRefused is a message that failed verification: terminated.
	KindRefused
	// KindAssign carries task.assigned events (Assign).
	KindAssign
	// KindCancel carries task.cancel events (Cancels).
	KindCancel
	// KindElect carries leader.elected events (Epochs).
	KindElect
	// KindDrain carries node.drain events (Drains).
	KindDrain
)

// Delivery is one delivery of a message of the executor's consumer.
type Delivery struct {
	// Now is when the shell took the message.
	Now time.Time
	// Seq is the message's stream sequence; NumDelivered counts its
	// deliveries (1: the first).
	Seq          uint64
	NumDelivered uint64
	Kind         Kind
	// Fence is the leader epoch in force at Seq (assignments and cancels).
	Fence uint64
	// Unavailable is set when the shell could not read the local state it
	// needs (Fence, Recorded): the message is left unacknowledged, to be
	// delivered again after AckWait.
	Unavailable bool
	// Assign are the assignments of a KindAssign message addressed to this
	// node (others and unreadable ones are left out by the shell).
	Assign []Assignment
	// Cancels are the cancels of a KindCancel message addressed to this
	// node.
	Cancels []Cancel
	// Epochs are the epochs of a KindElect message's elections.
	Epochs []uint64
	// Drains are the nodes a KindDrain message's drains name, with why.
	Drains []event.NodeDrainData
}

// Assignment is one assigned attempt of a delivery.
type Assignment struct {
	Attempt
	// Recorded is the attempt's state in the local state ("" if none; not
	// read for a noop).
	Recorded string
}

// Cancel is one cancel of a delivery.
type Cancel struct {
	Run  string
	Data event.TaskCancelData
	// Recorded says whether the local state holds the attempt.
	Recorded bool
}

// Key is the cancelled attempt's key.
func (c Cancel) Key() Key { return Key{Run: c.Run, Step: c.Data.Step, Attempt: c.Data.Attempt} }

// Why is the cancel's reason for people.
func (c Cancel) Why() string {
	d := c.Data
	switch {
	case d.Code != "" && d.Reason != "":
		return d.Code + ": " + d.Reason
	case d.Code != "":
		return d.Code
	case d.Reason != "":
		return d.Reason
	}
	return "task.cancel"
}

// Recorded answers a record action with its ID: Err is nil once the
// record is durable. Halt says the executor halted (a failed sync, or
// Stop began): what the record covered stays unacknowledged for the next
// start.
type Recorded struct {
	ID   uint64
	Err  error
	Halt bool
}

// Exited says that an attempt's process group is gone: its slot is free.
type Exited struct{ Key Key }

// Reported says that an attempt's result was reported (or its report
// failed): a drain no longer waits for it.
type Reported struct{ Key Key }

// Tick begins a pass of the shell's loop at Now: held messages are kept
// from redelivery (Touch) every KeepAlive, and a pass that comes StallGap
// after the last one re-arms the backlog rule.
type Tick struct{ Now time.Time }

// Alive says that the loop finished handling a batch of inputs at Now:
// the stall check (Tick) measures from here, its own work aside.
type Alive struct{ Now time.Time }

// Pass ends a pass of the shell's loop at Now, once it handed every input
// it had: queued attempts start while slots are free (unless Paused), and
// a drain completes once nothing is active.
type Pass struct {
	Now    time.Time
	Paused bool
}

// Begin arms the backlog rule for the consumer's position at start (or
// after it was made again): nothing starts before Pending messages after
// stream sequence Delivered were handled, or a watcher found it read.
type Begin struct {
	Now       time.Time
	Delivered uint64
	Pending   uint64
}

// BacklogRead says that a watcher found the backlog of arm Gen read.
type BacklogRead struct{ Gen int }

// ConsumerLost says that the consumer was deleted under the executor.
type ConsumerLost struct{}

// Recreated says that the consumer was made again (or its recreation was
// given up because the executor stopped).
type Recreated struct{}

// Halt says that the executor halted (a failed sync) or is stopping: it
// starts nothing more and holds what it is delivered.
type Halt struct{}

// Release ends the core's life (Stop, once the loop ended): the attempts
// recorded ahead that did not start are forgotten and every message held
// is given back to the server.
type Release struct{}

func (Delivery) input()     {}
func (Recorded) input()     {}
func (Exited) input()       {}
func (Reported) input()     {}
func (Tick) input()         {}
func (Pass) input()         {}
func (Alive) input()        {}
func (Begin) input()        {}
func (BacklogRead) input()  {}
func (ConsumerLost) input() {}
func (Recreated) input()    {}
func (Halt) input()         {}
func (Release) input()      {}
