package planner

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// Source turns a submitted goal into a plan. It is the seam where planners
// plug in: FileSource for goals that come with a plan file, and (in a later
// version) an LLM source for free-text goals, set as Config.Text.
//
// The planner calls Plan from its own goroutines, never from Fold, with a
// context that ends at Config.Timeout or when the planner stops. Whatever
// Plan returns is checked again with plan.Normalize before it is proposed,
// so a source need not be trusted. An error becomes the PlanRejected
// message, so it should say what to fix; a source retries its own
// transient failures (network, rate limits) within ctx.
type Source interface {
	// Name is the proposal's provenance, PlanProposedData.Source: "file",
	// "llm".
	Name() string
	// Plan returns the plan for goal, submitted as run.
	Plan(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error)
}

// InfoSource is a Source that also returns the provenance of its plans
// (roles/planner/llm): the planner records it in plan.proposed, or in
// plan.rejected when planning failed, so that a replay needs no model.
type InfoSource interface {
	Source
	// PlanInfo is Plan with the provenance, returned with errors too as
	// far as planning got (nil when it got nowhere).
	PlanInfo(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, *event.PlannerInfo, error)
}

// ReplanSource is a Source that can revise a running run's plan after a
// step failed with on_failure replan (roles/planner/llm). A planner
// without one does not claim replans; a plan-file goal is never
// replanned (ErrFileReplan).
type ReplanSource interface {
	Source
	// Replan returns the next revision for req with the model's
	// rationale and the provenance (nil when planning got nowhere).
	Replan(ctx context.Context, run string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error)
}

// Sentinel errors, wrapped in the PlanRejected messages they cause.
var (
	// ErrNeedLLM: a free-text goal reached a planner without an LLM source.
	ErrNeedLLM = errors.New("planner: free-text goals need an LLM planner")
	// ErrNoGoal: the goal has neither a plan file nor text.
	ErrNoGoal = errors.New("planner: goal has neither a plan file nor text")
	// ErrFileReplan: a step of a plan-file run asked for a replan.
	ErrFileReplan = errors.New("planner: a plan-file goal cannot be replanned")
)

// FileSource plans goals submitted with a plan file: it parses the file
// with plan.Parse. The plan's goal defaults to the submitted goal.
type FileSource struct{}

var _ Source = FileSource{}

// Name is "file".
func (FileSource) Name() string { return "file" }

// Plan parses goal.PlanFile. A malformed file gives the *plan.Error that
// lists every problem with file:line:col.
func (FileSource) Plan(_ context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error) {
	if goal.PlanFile == "" {
		return nil, fmt.Errorf("run %s: %w", run, ErrNoGoal)
	}
	name := goal.PlanName
	if name == "" {
		name = "plan"
	}
	p, err := plan.Parse(name, []byte(goal.PlanFile))
	if err != nil {
		return nil, err
	}
	if p.Goal == "" {
		p.Goal = goal.Goal
	}
	return p, nil
}
