package web

import (
	"encoding/json"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// Decided gates. The ledger records every answer to a gate: an operator's
// own gate.decided (agentctl gate signs it with their credential), a
// gate.decided_for the ui node signs naming the operator it authenticated
// (the dashboard, POST /api/gates), and the leader's gate.closed when a
// gate expires unanswered. The inbox lists the newest of them and a
// step's panel its own, with who decided, through what, when, the answer
// and the reason.

// decisionTypes are the events that answer a gate.
var decisionTypes = []string{string(event.GateDecided), string(event.GateDecidedFor), string(event.GateClosed)}

// maxDecided bounds the decided gates the inbox lists.
const maxDecided = 50

// decision is one recorded answer to a gate.
type decision struct {
	Seq       uint64
	Run, Step string
	Action    event.GateAction
	// By is the approver (the leader's node for an expired gate), Via how
	// the answer came.
	By, Via string
	At      time.Time
	// Expired: the leader closed the gate unanswered.
	Expired         bool
	Reason, Command string
}

// decisionOf reads an answer from an audit line (false: not one).
func decisionOf(l apiwire.AuditLine) (decision, bool) {
	d := decision{Seq: l.Seq, Run: l.Run, At: l.Time}
	switch event.Type(l.Type) {
	case event.GateDecided:
		var p event.GateDecidedData
		if json.Unmarshal(l.Data, &p) != nil {
			return d, false
		}
		d.Step, d.Action, d.Reason, d.Command = p.Step, p.Action, p.Reason, p.Command
		d.By, d.Via = l.Node, "agentctl"
	case event.GateDecidedFor:
		var p event.GateDecidedForData
		if json.Unmarshal(l.Data, &p) != nil {
			return d, false
		}
		d.Step, d.Action, d.Reason, d.Command = p.Step, p.Action, p.Reason, p.Command
		d.By, d.Via = p.Operator, "the dashboard (ui node "+l.Node+")"
	case event.GateClosed:
		var p event.GateClosedData
		if json.Unmarshal(l.Data, &p) != nil {
			return d, false
		}
		d.Step, d.Action, d.Reason, d.Expired = p.Step, p.Action, p.Reason, true
		d.By, d.Via = l.Node, "expired unanswered ("+p.Code+")"
	default:
		return d, false
	}
	return d, true
}
