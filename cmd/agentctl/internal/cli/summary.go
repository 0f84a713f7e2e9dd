package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// summarizers turn a payload into the text column of audit tail, one per
// event type; unknown types show their compact JSON.
var summarizers = map[event.Type]func(raw []byte) string{
	event.GoalSubmitted: with(func(d event.GoalSubmittedData) string {
		if d.PlanName != "" {
			return fmt.Sprintf("%s (plan %s)", d.Goal, d.PlanName)
		}
		return d.Goal
	}),
	event.RunCancel: with(func(d event.RunCancelData) string { return "cancel requested" + because(d.Reason) }),
	event.MemoryPut: with(func(d event.MemoryPutData) string {
		return fmt.Sprintf("%s/%s = %s", d.Scope, d.Key, truncate(d.Value, 40))
	}),
	event.PlanProposed: with(func(d event.PlanProposedData) string {
		return fmt.Sprintf("revision %d from %s, %d steps", d.Revision, d.Source, len(d.Plan.Steps))
	}),
	event.PlanRejected:  with(func(d event.PlanRejectedData) string { return d.Error }),
	event.LeaderElected: with(func(d event.LeaderElectedData) string { return fmt.Sprintf("leader %s, epoch %d", d.Leader, d.Epoch) }),
	event.PlanAccepted:  with(func(d event.PlanAcceptedData) string { return fmt.Sprintf("revision %d", d.Revision) }),
	event.TaskAssigned: with(func(d event.TaskAssignedData) string {
		return fmt.Sprintf("%s attempt %d → %s", d.Step.ID, d.Attempt, d.Node)
	}),
	event.TaskCancel: with(func(d event.TaskCancelData) string {
		return fmt.Sprintf("%s attempt %d on %s%s", d.Step, d.Attempt, d.Node, because(d.Reason))
	}),
	event.RunFinished:    with(func(d event.RunFinishedData) string { return string(d.Status) + because(d.Reason) }),
	event.ExecutorOnline: with(func(d event.ExecutorOnlineData) string { return fmt.Sprintf("%d slots", d.Slots) }),
	event.TaskStarted: with(func(d event.TaskStartedData) string {
		return fmt.Sprintf("%s attempt %d on %s", d.Step, d.Attempt, d.Node)
	}),
	event.TaskFinished: with(func(d event.TaskFinishedData) string {
		s := fmt.Sprintf("%s attempt %d %s (exit %d, %s)", d.Step, d.Attempt, d.Status, d.ExitCode, fmtDuration(d.Duration.Std()))
		if d.Error != "" {
			s += ": " + truncate(d.Error, 60)
		}
		return s
	}),
	event.MemoryWritten: with(func(d event.MemoryWrittenData) string {
		return fmt.Sprintf("%s/%s = %s", d.Scope, d.Key, truncate(d.Value, 40))
	}),
	event.Rejected: with(func(d event.RejectedData) string {
		return fmt.Sprintf("%s (signer %s, claimed %s)", d.Reason, dash(d.Signer), dash(d.ClaimedType))
	}),
	event.Gap: with(func(d event.GapData) string { return fmt.Sprintf("stream seq %d–%d missing", d.From, d.To) }),
}

// with adapts a typed summarizer; a payload that does not decode falls back
// to its JSON.
func with[T any](f func(T) string) func([]byte) string {
	return func(raw []byte) string {
		var d T
		if err := json.Unmarshal(raw, &d); err != nil {
			return compact(raw)
		}
		return f(d)
	}
}

func summary(l api.AuditLine) string {
	if f, ok := summarizers[event.Type(l.Type)]; ok {
		return oneLine(f(l.Data))
	}
	return compact(l.Data)
}

func compact(raw []byte) string {
	if string(raw) == "null" {
		return ""
	}
	return truncate(oneLine(string(raw)), 80)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
