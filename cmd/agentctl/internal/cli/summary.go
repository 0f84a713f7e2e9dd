package cli

import (
	"encoding/json"
	"fmt"
	"slices"
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
	event.RunPause:  with(func(d event.RunBrakeData) string { return "pause requested" + because(d.Reason) }),
	event.RunResume: with(func(d event.RunBrakeData) string { return "resume requested" + because(d.Reason) }),
	event.RunPausedFor: with(func(d event.RunBrakeForData) string {
		return "pause requested by " + d.Operator + " (through the ui)" + because(d.Reason)
	}),
	event.RunResumedFor: with(func(d event.RunBrakeForData) string {
		return "resume requested by " + d.Operator + " (through the ui)" + because(d.Reason)
	}),
	event.RunCancelRequestedFor: with(func(d event.RunCancelForData) string {
		return "cancel requested by " + d.Operator + " (through the ui)" + because(d.Reason)
	}),
	event.RunRated: with(func(d event.RunRatedData) string { return "rated " + string(d.Rating) + because(d.Reason) }),
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
	event.RunFinished: with(func(d event.RunFinishedData) string { return string(d.Status) + because(d.Reason) }),
	event.ExecutorOnline: with(func(d event.ExecutorOnlineData) string {
		s := fmt.Sprintf("%d slots", d.Slots)
		if d.Queue > 0 {
			s += fmt.Sprintf(", queue %d", d.Queue)
		}
		if len(d.Capabilities) > 0 {
			s += ", offers " + strings.Join(d.Capabilities, ",")
		}
		return s
	}),
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
	event.MemoryRecorded: with(func(d event.MemoryRecordedData) string {
		return fmt.Sprintf("%s/%s = %s (step %s attempt %d %s)", dash(d.Scope), d.Key, truncate(d.Value, 40), d.Step, d.Attempt, d.Status)
	}),
	event.MemoryReleased: with(func(d event.MemoryQuarantineData) string { return fmt.Sprintf("%s/%s released", d.Scope, d.Key) }),
	event.MemoryDropped:  with(func(d event.MemoryQuarantineData) string { return fmt.Sprintf("%s/%s dropped", d.Scope, d.Key) }),
	event.MemoryPruned: with(func(d event.MemoryPrunedData) string {
		return "facts expired before " + fmtTime(d.Before) + " pruned"
	}),
	event.Rejected: with(func(d event.RejectedData) string {
		return fmt.Sprintf("%s (signer %s, claimed %s)", d.Reason, dash(d.Signer), dash(d.ClaimedType))
	}),
	event.Gap: with(func(d event.GapData) string { return fmt.Sprintf("stream seq %d–%d missing", d.From, d.To) }),
	event.RejectedSummary: with(func(d event.RejectedSummaryData) string {
		codes := make([]string, 0, len(d.ByCode))
		for code, n := range d.ByCode {
			codes = append(codes, fmt.Sprintf("%s %d", code, n))
		}
		slices.Sort(codes)
		return fmt.Sprintf("%d refused messages counted, not recorded (stream seq %d–%d): %s", d.Count, d.From, d.To, strings.Join(codes, ", "))
	}),
	event.NodeJoined:  with(func(d event.NodeData) string { return nodeSummary("joined", d) }),
	event.NodeSuspect: with(func(d event.NodeData) string { return nodeSummary("suspect", d) }),
	event.NodeFailed:  with(func(d event.NodeData) string { return nodeSummary("failed", d) }),
	event.NodeLeft:    with(func(d event.NodeData) string { return nodeSummary("left", d) }),
	event.NodeDrain:   with(func(d event.NodeDrainData) string { return "drain " + d.Node + because(d.Reason) }),
	event.StepDecided: with(func(d event.StepDecidedData) string { return string(d.Action) + " " + d.Step + because(d.Reason) }),
}

// nodeSummary says what a membership event recorded: "node b failed
// (executor, 2 slots, epoch 3): no answer to probes".
func nodeSummary(what string, d event.NodeData) string {
	s := fmt.Sprintf("node %s %s (%s", d.Node, what, dash(strings.Join(d.Roles, ",")))
	if d.Slots > 0 {
		s += fmt.Sprintf(", %d slots", d.Slots)
	}
	s += fmt.Sprintf(", epoch %d)", d.Epoch)
	if d.Reason != "" {
		s += ": " + truncate(d.Reason, 60)
	}
	return s
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
