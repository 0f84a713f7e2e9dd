package apiwire

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// MethodAlarmsList pages through the alarms in force in the cluster
// (agentctl alarm ls): raised by a node (alarm.raised) and not cleared
// since (alarm.cleared), as the answering ledger node folded them.
const MethodAlarmsList = "alarms.list"

// Alarm is an alarm in force on a node: raised (alarm.raised) and not
// cleared since (alarm.cleared), as the ledger recorded it.
type Alarm struct {
	// Node is the node the alarm is about (the event's signer).
	Node string `json:"node"`
	// Alarm is its code; Check the readiness check that raised it.
	Alarm event.Alarm `json:"alarm"`
	Check string      `json:"check,omitempty"`
	// Reason is the alarm.raised's reason, for people.
	Reason string `json:"reason,omitempty"`
	// Since is when the node first saw the fault (its clock).
	Since time.Time `json:"since,omitzero"`
	// Raised is the alarm.raised event's time, and Seq its ledger
	// position.
	Raised time.Time `json:"raised"`
	Seq    uint64    `json:"seq"`
	// Unrecorded marks an alarm the ledger does not hold: the node reports
	// it in its own readiness checks (node.info) but could not record it
	// (no events stream, a full disk) or it is not folded yet. Raised and
	// Seq are zero. The ledger's fold never sets it; agentctl alarm ls
	// adds such alarms from the nodes' answers.
	Unrecorded bool `json:"unrecorded,omitempty"`
}

// Page sizes of alarms.list: a request's limit is clamped to the maximum;
// 0 asks for the default.
const (
	DefaultAlarmsPage = 1000
	MaxAlarmsPage     = 1000
)

// AlarmsListRequest asks for a page of alarms, by node then code (the
// cursor is the Next of the previous page; Limit defaults to and is capped
// at MaxAlarmsPage).
type AlarmsListRequest = CursorRequest
