package cli

import (
	"encoding/json"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// Membership, drain and operator decisions read as sentences in audit
// tail, not as JSON.
func TestSummaryOfVersion2Types(t *testing.T) {
	for _, tt := range []struct {
		typ  event.Type
		data any
		want string
	}{
		{event.NodeFailed, event.NodeData{Decision: event.Decision{Epoch: 3}, Node: "b", Roles: []string{"executor"}, Slots: 2, Reason: "no answer to probes"},
			"node b failed (executor, 2 slots, epoch 3): no answer to probes"},
		{event.NodeJoined, event.NodeData{Decision: event.Decision{Epoch: 1}, Node: "a"}, "node a joined (-, epoch 1)"},
		{event.NodeDrain, event.NodeDrainData{Node: "c", Reason: "kernel upgrade"}, "drain c: kernel upgrade"},
		{event.StepDecided, event.StepDecidedData{Step: "deploy", Action: event.StepRetry}, "retry deploy"},
		{event.ExecutorOnline, event.ExecutorOnlineData{Slots: 4, Queue: 32, Capabilities: []string{"docker"}}, "4 slots, queue 32, offers docker"},
		{event.RejectedSummary, event.RejectedSummaryData{From: 10, To: 109, Count: 100,
			ByCode:   map[event.RejectCode]uint64{event.RejectUnknownSigner: 3, event.RejectBadSignature: 97},
			BySigner: map[string]uint64{"b": 97, "unknown": 3}},
			"100 refused messages counted, not recorded (stream seq 10–109): bad_signature 97, unknown_signer 3"},
	} {
		raw, err := json.Marshal(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(api.AuditLine{Type: string(tt.typ), Data: raw}); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.typ, got, tt.want)
		}
	}
}

// The brakes read as sentences; those a ui node signs for an operator
// name the operator.
func TestSummaryOfBrakesThroughTheUI(t *testing.T) {
	for _, tt := range []struct {
		typ  event.Type
		data any
		want string
	}{
		{event.RunPause, event.RunBrakeData{Reason: "freeze"}, "pause requested: freeze"},
		{event.RunResume, event.RunBrakeData{}, "resume requested"},
		{event.RunPausedFor, event.RunBrakeForData{RunBrakeData: event.RunBrakeData{Reason: "freeze"}, Operator: "alice"}, "pause requested by alice (through the ui): freeze"},
		{event.RunResumedFor, event.RunBrakeForData{Operator: "bob"}, "resume requested by bob (through the ui)"},
		{event.RunCancelRequestedFor, event.RunCancelForData{RunCancelData: event.RunCancelData{Reason: "wrong branch"}, Operator: "carol"}, "cancel requested by carol (through the ui): wrong branch"},
	} {
		raw, err := json.Marshal(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(api.AuditLine{Type: string(tt.typ), Data: raw}); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.typ, got, tt.want)
		}
	}
}

// A proposal decided through the ui reads as the operator's decision.
func TestSummaryOfProposalDecidedThroughTheUI(t *testing.T) {
	for _, tt := range []struct {
		data event.ProposalDecidedForData
		want string
	}{
		{event.ProposalDecidedForData{Operator: "alice", Action: event.ProposalApprove, ProposalDecidedData: event.ProposalDecidedData{Proposal: "p-1"}},
			"proposal p-1 approved by alice (through the ui)"},
		{event.ProposalDecidedForData{Operator: "bob", Action: event.ProposalReject, ProposalDecidedData: event.ProposalDecidedData{Proposal: "p-2", Reason: "fix the mirror"}},
			"proposal p-2 rejected by bob (through the ui): fix the mirror"},
	} {
		raw, err := json.Marshal(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(api.AuditLine{Type: string(event.ProposalDecidedFor), Data: raw}); got != tt.want {
			t.Errorf("%q, want %q", got, tt.want)
		}
	}
}
