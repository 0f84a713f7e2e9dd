package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// Two operators may answer one gate at once (approve here, deny there).
// Both answers reach the ledger; the leader folds them in ledger order,
// and the gate takes the first that closes it: an answer after that
// counts for nothing. So once the ledger has accepted an answer,
// agentctl reads the gate's events of the run up to it, and tells the
// operator whose answer came too late which one won, who gave it, and
// exits non-zero.

// gateTypes are the events that open, answer and close gates.
var gateTypes = []string{string(event.GateOpened), string(event.GateDecided), string(event.GateDecidedFor), string(event.GateClosed)}

// gateWinner is what closed a gate before an answer.
type gateWinner struct {
	// Action is the winning answer's, or what closing did.
	Action event.GateAction
	// By is the operator who answered; "" when the leader closed the gate.
	By        string
	Reason    string
	Command   string
	Code      string
	LedgerSeq uint64
}

// gateTracker follows one gate through its events, as the leader's fold
// does, to find the event that closed it.
type gateTracker struct {
	g         *api.Gate
	approvals int
	approvers []string
	// notSubmitter: the run's submitter's approval does not count.
	notSubmitter bool
	winner       *gateWinner
}

func newGateTracker(g *api.Gate) *gateTracker {
	return &gateTracker{g: g, approvals: max(g.Approvals, 1), notSubmitter: g.NotSubmitter}
}

// fold applies one audit line: a gate.opened of the gate starts it again;
// an answer or a closing that names its subject may close it.
func (t *gateTracker) fold(l api.AuditLine) {
	switch event.Type(l.Type) {
	case event.GateOpened:
		var d event.GateOpenedData
		if json.Unmarshal(l.Data, &d) == nil && t.is(d.Step, d.Subject) {
			t.approvals, t.notSubmitter, t.approvers, t.winner = max(d.Approvals, 1), d.NotSubmitter, nil, nil
		}
	case event.GateClosed:
		var d event.GateClosedData
		if json.Unmarshal(l.Data, &d) == nil && t.is(d.Step, d.Subject) && t.winner == nil {
			t.winner = &gateWinner{Action: d.Action, Code: d.Code, Reason: d.Reason, LedgerSeq: l.Seq}
		}
	case event.GateDecided, event.GateDecidedFor:
		var d event.GateDecidedForData
		if json.Unmarshal(l.Data, &d) != nil {
			return
		}
		by := l.Node
		if event.Type(l.Type) == event.GateDecidedFor {
			by = d.Operator
		}
		if t.is(d.Step, d.Subject) && t.winner == nil && by != "" {
			t.answer(d.GateDecidedData, by, l.Seq)
		}
	}
}

func (t *gateTracker) is(step, subject string) bool {
	return step == t.g.Step && subject == t.g.Subject
}

// answer folds answer d by operator by, as the leader does.
func (t *gateTracker) answer(d event.GateDecidedData, by string, seq uint64) {
	won := &gateWinner{Action: d.Action, By: by, Reason: d.Reason, Command: d.Command, LedgerSeq: seq}
	plan := t.g.Step == ""
	switch d.Action {
	case event.GateAccept:
		if (t.notSubmitter && by == t.g.Submitter) || slices.Contains(t.approvers, by) {
			return
		}
		t.approvers = append(t.approvers, by)
		if len(t.approvers) >= t.approvals {
			t.winner = won
		}
	case event.GateEdit:
		if !plan && d.Command != "" {
			t.winner = won
		}
	case event.GateSkip:
		if !plan {
			t.winner = won
		}
	case event.GateDeny:
		t.winner = won
	}
}

// decidedBefore reads the gate events of g's run that the ledger holds
// before the message at stream seq seq, and returns what closed g among
// them (nil: nothing did, the answer counts). seen says whether the
// answering ledger node held the message itself; it is asked again for
// up to --timeout while it does not.
func (a *app) decidedBefore(ctx context.Context, g *api.Gate, seq uint64) (winner *gateWinner, seen bool, err error) {
	c, err := a.client()
	if err != nil {
		return nil, false, err
	}
	t := newGateTracker(g)
	req := api.AuditRequest{Run: g.Run, Types: gateTypes}
	deadline := time.Now().Add(a.timeout)
	for {
		page, err := c.Audit(ctx, req)
		if err != nil {
			return t.winner, false, fmt.Errorf("read the gate events of run %s: %w", g.Run, err)
		}
		for _, l := range page.Items {
			if l.StreamSeq >= seq {
				return t.winner, true, nil
			}
			t.fold(l)
		}
		if page.Next != "" {
			req.Cursor = page.Next
		}
		if !page.End {
			continue
		}
		if time.Now().After(deadline) {
			return t.winner, false, nil
		}
		select {
		case <-ctx.Done():
			return t.winner, false, ctx.Err()
		case <-time.After(acceptPoll):
		}
	}
}

// lostError is an answer to gate g (action) that another closed first.
func lostError(g *api.Gate, action event.GateAction, w *gateWinner) error {
	var what string
	if w.By == "" {
		gate := "the plan gate"
		if g.Step != "" {
			gate = "the gate of step " + g.Step
		}
		why := string(w.Action)
		if w.Code != "" {
			why += ", " + w.Code
		}
		if w.Reason != "" {
			why += ": " + w.Reason
		}
		what = fmt.Sprintf("%s of run %s closed first, unanswered (%s; ledger seq %d)", gate, g.Run, why, w.LedgerSeq)
	} else {
		detail := fmt.Sprintf("ledger seq %d", w.LedgerSeq)
		if w.Command != "" {
			detail += fmt.Sprintf(", command %q", w.Command)
		}
		if w.Reason != "" {
			detail += fmt.Sprintf(", reason %q", w.Reason)
		}
		what = fmt.Sprintf("%s of %s of run %s by %s came first (%s)", w.Action, gateName(g), g.Run, w.By, detail)
	}
	return api.WithHint(fmt.Errorf("%s: your %s counts for nothing (it is in the ledger, and the leader ignores it)", what, action),
		"agentctl run show "+g.Run+" shows what the run does now")
}
