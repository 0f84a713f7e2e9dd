package cli

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/spf13/cobra"
)

// stepNeedsDecision is the status of a step held for an operator's
// decision (event.StepNeedsDecision).
const stepNeedsDecision = string(event.StepNeedsDecision)

func (a *app) stepCmd() *cobra.Command {
	return group("step", "Decide on a step held for a decision",
		`A step that is not idempotent, whose node failed (or did not start it in
time) after it may have started, is held in needs-decision: nothing runs it
again until an operator decides. Look at what it did (agentctl run show RUN,
agentctl run logs RUN STEP), then retry it or skip it.`,
		a.stepDecideCmd(event.StepRetry, "Run a held step again, as a new attempt",
			`Publish a step.decided event (action retry), signed with your operator
credentials: the orchestrator gives the step a new attempt on a live
executor. RUN may be any unique start or end of the run id.`),
		a.stepDecideCmd(event.StepSkip, "End a held step as skipped; its dependents run",
			`Publish a step.decided event (action skip), signed with your operator
credentials: the step ends skipped (code skipped_by_operator) and the steps
that depend on it run. RUN may be any unique start or end of the run id.`))
}

func (a *app) stepDecideCmd(action event.StepAction, short, long string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     string(action) + " RUN STEP",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  agentctl step %s 0190a3c2 deploy --reason \"checked: the deploy never began\"", action),
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.stepDecide(cmd.Context(), argv[0], argv[1], action, reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return cmd
}

// decidedResult is what step retry|skip prints with -o json.
type decidedResult struct {
	Run    string `json:"run"`
	Step   string `json:"step"`
	Action string `json:"action"`
	Event  string `json:"event"`
	Reason string `json:"reason,omitempty"`
}

// stepDecide publishes an operator's decision on a step held for one. A
// step that is not held (or not in the run) is refused before anything is
// published: the orchestrator would ignore the decision.
func (a *app) stepDecide(ctx context.Context, id, step string, action event.StepAction, reason string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunsGet(ctx, id)
	if err != nil {
		return err
	}
	status := ""
	for _, s := range run.Steps {
		if s.ID == step {
			status = s.Status
		}
	}
	switch {
	case status == "":
		return fmt.Errorf("run %s has no step %q", run.ID, step)
	case status != stepNeedsDecision:
		return fmt.Errorf("step %s of run %s is %s, not held for a decision (%s): nothing to %s", step, run.ID, status, stepNeedsDecision, action)
	}
	d, err := event.NewDraft(event.StepDecided, run.ID, event.StepDecidedData{Step: step, Action: action, Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("%s step %s of run %s: %w", action, step, run.ID, err)
	}
	if a.output != formatText {
		return a.writeJSON(decidedResult{Run: run.ID, Step: step, Action: string(action), Event: d.ID, Reason: reason})
	}
	fmt.Fprintf(a.env.Stdout, "%s requested for step %s of run %s (event %s)\n", action, step, run.ID, d.ID)
	return nil
}
