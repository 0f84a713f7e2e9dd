package cli

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/spf13/cobra"
)

func (a *app) runPauseCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "pause ID [--reason TEXT]",
		Short: "Brake a run: no new assignments; its running steps finish",
		Long: `Publish a run.pause event, signed with your operator credentials. The
orchestrator assigns none of the run's steps until it is resumed; steps
already running finish and are recorded. 'agentctl run resume ID' lifts
the brake. ID may be any unique start or end of the run id.`,
		Example: `  agentctl run pause 0190a3c2 --reason "the deploy target is being repaired"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runBrake(cmd.Context(), event.RunPause, argv[0], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return cmd
}

func (a *app) runResumeCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Lift an operator's brake on a run: its steps are assigned again",
		Long: `Publish a run.resume event, signed with your operator credentials: the
orchestrator carries on with a run paused by 'agentctl run pause'. ID may be
any unique start or end of the run id.`,
		Example: `  agentctl run resume 0190a3c2`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runBrake(cmd.Context(), event.RunResume, argv[0], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return cmd
}

// brakeResult is what run pause and run resume print with -o json.
type brakeResult struct {
	Run    string `json:"run"`
	Action string `json:"action"`
	Event  string `json:"event"`
	Reason string `json:"reason,omitempty"`
}

// runBrake publishes run.pause or run.resume for a run that has not
// finished.
func (a *app) runBrake(ctx context.Context, t event.Type, id, reason string) error {
	verb := "pause"
	if t == event.RunResume {
		verb = "resume"
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunSummary(ctx, id)
	if err != nil {
		return err
	}
	if finished(run.Status) {
		return fmt.Errorf("run %s already finished (%s): nothing to %s (nothing was published)", run.ID, run.Status, verb)
	}
	d, err := event.NewDraft(t, run.ID, event.RunBrakeData{Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("%s run %s: %w", verb, run.ID, err)
	}
	if a.output != formatText {
		return a.writeJSON(brakeResult{Run: run.ID, Action: verb, Event: d.ID, Reason: reason})
	}
	fmt.Fprintf(a.env.Stdout, "%s requested for run %s (event %s)\n", verb, run.ID, d.ID)
	return nil
}
