package telemetry

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Kind is what a record reports: its "event" field.
type Kind string

// Record kinds. The five kinds of the self-improvement plan (tool_call,
// user_correction, task_failure, feedback, escalation), plus step (an
// attempt that did not fail and is not a tool call) and run (a run that
// ended).
const (
	// KindStep is a finished attempt of a step that is not a tool call,
	// which did not fail (succeeded, skipped by its check, cancelled).
	KindStep Kind = "step"
	// KindToolCall is a finished attempt of a tool step (a plugin's tool),
	// whatever its outcome (Status says it).
	KindToolCall Kind = "tool_call"
	// KindTaskFailure is a failed attempt of a step that is not a tool
	// call.
	KindTaskFailure Kind = "task_failure"
	// KindUserCorrection is an operator's edit, skip or deny at a gate,
	// or skip or retry of a step held for a decision.
	KindUserCorrection Kind = "user_correction"
	// KindFeedback is an operator's rating of a run (run.rated).
	KindFeedback Kind = "feedback"
	// KindEscalation is work handed to operators: a gate opened (a policy
	// gate, a plan gate, a step held for a decision) or a run stopped by
	// a budget.
	KindEscalation Kind = "escalation"
	// KindRun is a run that ended.
	KindRun Kind = "run"
)

// Kinds lists every record kind, in the order docs/telemetry.md shows
// them.
var Kinds = []Kind{KindStep, KindToolCall, KindTaskFailure, KindUserCorrection, KindFeedback, KindEscalation, KindRun}

// Record is one line of the telemetry export. The first twelve fields are
// the schema of the console notes ({event, timestamp, goal, command,
// risk_level, duration, exit_code, planner_model, planner_version, run,
// step, node}); the rest say more about the kinds that have it. Empty
// fields are left out, except event, timestamp and seq. Fields are only
// ever added.
type Record struct {
	// Event is the record's kind.
	Event Kind `json:"event"`
	// Timestamp is when the source event was created (its signer's
	// clock), UTC.
	Timestamp time.Time `json:"timestamp"`
	// Goal is the run's goal text.
	Goal string `json:"goal,omitempty"`
	// Command is the attempt's command: a shell step's script, a tool
	// step's "plugin/tool", another kind's name (file.write, git.finish…);
	// for a correction, the command the operator put in (edit) or the one
	// gated; at most MaxCommand bytes.
	Command string `json:"command,omitempty"`
	// RiskLevel is the policy's level for the command (low, medium, high,
	// critical) when a gate recorded the verdict; empty otherwise.
	RiskLevel string `json:"risk_level,omitempty"`
	// Duration is the attempt's (or the run's) duration in seconds.
	Duration *float64 `json:"duration,omitempty"`
	// ExitCode is the attempt's exit code (tool_call, task_failure, step).
	ExitCode *int `json:"exit_code,omitempty"`
	// PlannerModel is the model that proposed the run's plan in force
	// (empty for a plan file); PlannerVersion is the planner's build
	// version and prompt template hash, "<build>+<planner>+<template>".
	PlannerModel   string `json:"planner_model,omitempty"`
	PlannerVersion string `json:"planner_version,omitempty"`
	// Run, Step and Node name the run, the step and the node the fact is
	// about (Node: the executor of an attempt, the operator of a
	// correction or a rating).
	Run  string `json:"run,omitempty"`
	Step string `json:"step,omitempty"`
	Node string `json:"node,omitempty"`

	// Seq is the ledger position of the source event: the evidence.
	Seq uint64 `json:"seq"`
	// Type is the source event's type (task.finished, gate.decided…).
	Type event.Type `json:"type"`
	// Attempt is the step attempt (attempt records and their gates).
	Attempt int `json:"attempt,omitempty"`
	// Kind is the step's kind (shell, tool, file.write…).
	Kind event.StepKind `json:"kind,omitempty"`
	// Status is the attempt's or run's outcome (succeeded, failed…).
	Status string `json:"status,omitempty"`
	// Class is a failed attempt's class (transient, logic, policy…).
	Class string `json:"class,omitempty"`
	// Code is the stable reason of a failure, a closed gate or a run's
	// end (orchestrator codes: timed_out, budget_exceeded…).
	Code string `json:"code,omitempty"`
	// CommandHash is the executor's hash of the command it ran.
	CommandHash string `json:"command_hash,omitempty"`
	// Action is a correction's action (edit, skip, deny, retry) or an
	// escalation's gate kind (policy, plan, needs-decision, budget).
	Action string `json:"action,omitempty"`
	// Rating is a feedback record's up or down.
	Rating string `json:"rating,omitempty"`
	// Reason is the operator's words (corrections, feedback) or why
	// (escalations, failures, runs that ended): redacted, at most
	// MaxCommand bytes.
	Reason string `json:"reason,omitempty"`
	// Family is the run's plan family, if any.
	Family string `json:"family,omitempty"`
}

// SourceTypes are the event types the projection reads; others are
// skipped. An exporter may ask its source for these alone.
var SourceTypes = []event.Type{
	event.GoalSubmitted, event.PlanProposed, event.PlanAccepted, event.TaskAssigned, event.TaskFinished,
	event.GateOpened, event.GateDecided, event.GateDecidedFor, event.StepDecided,
	event.RunFinished, event.RunRated,
}
