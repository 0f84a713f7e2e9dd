package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/spf13/cobra"
)

func finished(status event.RunStatus) bool {
	return status == event.RunSucceeded || status == event.RunFailed || status == event.RunCancelled
}

func (a *app) runCmd() *cobra.Command {
	return group("run", "List, show, cancel and rate runs, and print their output",
		"A run is one submitted goal: its plan (a DAG of steps grouped in subgoals)\nand the state of every step. Runs are named by id, or any unique start or end of it.",
		a.runListCmd(), a.runShowCmd(), a.runLogsCmd(), a.runCancelCmd(), a.runReplayCmd(), a.runPauseCmd(), a.runResumeCmd(), a.runRateCmd())
}

func (a *app) runShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a run and its DAG",
		Long: `Show a run: its goal, status and plan revision, then every step grouped by
subgoal with its status, attempt, node, exit code, duration and the steps
it depends on. ID may be any unique start or end of the run id. The steps are
read in pages, so a run of any size can be shown; -o json prints the whole
run object with every step.`,
		Example: `  agentctl run show 0190a3c2
  agentctl run show 0190a3c2 -o json | jq '.steps[] | select(.status=="failed")'`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			run, err := c.RunsGet(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(run)
			}
			return renderRun(a.env.Stdout, run, time.Now())
		},
	}
}

func (a *app) runCancelCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask the orchestrator to cancel a run",
		Long: `Publish a run.cancel event, signed with your operator credentials. The
orchestrator stops the run's running steps and finishes it as cancelled;
follow that with 'agentctl run show ID'. ID may be any unique start or end of the run id.`,
		Example: `  agentctl run cancel 0190a3c2 --reason "wrong branch"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runCancel(cmd.Context(), argv[0], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return cmd
}

// cancelResult is what run cancel prints with -o json.
type cancelResult struct {
	Run    string `json:"run"`
	Event  string `json:"event"`
	Reason string `json:"reason,omitempty"`
}

func (a *app) runCancel(ctx context.Context, id, reason string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunSummary(ctx, id)
	if err != nil {
		return err
	}
	if finished(run.Status) {
		return fmt.Errorf("run %s already finished (%s): nothing to cancel", run.ID, run.Status)
	}
	d, err := event.NewDraft(event.RunCancel, run.ID, event.RunCancelData{Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("cancel run %s: %w", run.ID, err)
	}
	if a.output != formatText {
		return a.writeJSON(cancelResult{Run: run.ID, Event: d.ID, Reason: reason})
	}
	fmt.Fprintf(a.env.Stdout, "cancel requested for run %s (event %s)\n", run.ID, d.ID)
	return nil
}
