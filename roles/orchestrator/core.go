package orchestrator

import (
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// The names below are the core's (package core), repeated here for the
// packages that knew them as the orchestrator's: the views the query API
// serves, the statuses and codes the CLI and the executor compare with,
// the backoff bound. New code imports core directly.

// State is core.State.
type State = core.State

// NewState is core.NewState.
func NewState() *State { return core.NewState() }

// Views of a run and its steps (core.RunView, core.StepView, ...).
type (
	RunView            = core.RunView
	RunSummary         = core.RunSummary
	StepView           = core.StepView
	StepEvidence       = core.StepEvidence
	HypothesisView     = core.HypothesisView
	HypothesisEvidence = core.HypothesisEvidence
	Verdict            = core.Verdict
)

// Hypotheses is core.Hypotheses.
func Hypotheses(p event.Plan, steps []StepView) []HypothesisView { return core.Hypotheses(p, steps) }

// Statuses (core.RunStatus, core.StepStatus).
type (
	RunStatus  = core.RunStatus
	StepStatus = core.StepStatus
)

// Step statuses (core.StepPending, ...).
const (
	StepPending   = core.StepPending
	StepReady     = core.StepReady
	StepAssigned  = core.StepAssigned
	StepRunning   = core.StepRunning
	StepSucceeded = core.StepSucceeded
	StepFailed    = core.StepFailed
	StepSkipped   = core.StepSkipped
	StepCancelled = core.StepCancelled
)

// Code is core.Code, a failure's stable reason.
type Code = core.Code

// Codes the executor and the CLI name (core.CodeNodeLost, ...).
const (
	CodeNodeLost     = core.CodeNodeLost
	CodeNodeDraining = core.CodeNodeDraining
	CodeNotStarted   = core.CodeNotStarted
)

// MaxBackoff is core.MaxBackoff.
const MaxBackoff = core.MaxBackoff

// InterruptedPrefix is core.InterruptedPrefix.
const InterruptedPrefix = core.InterruptedPrefix
