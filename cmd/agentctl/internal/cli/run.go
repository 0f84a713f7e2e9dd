package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

var runStatuses = []string{
	event.RunSubmitted, event.RunPlanning, event.RunPlanned, event.RunRunning,
	event.RunPaused, event.RunSucceeded, event.RunFailed, event.RunCancelled,
}

func finished(status string) bool {
	return status == event.RunSucceeded || status == event.RunFailed || status == event.RunCancelled
}

func (a *app) runCmd() *cobra.Command {
	return group("run", "List, show and cancel runs, and print their output",
		"A run is one submitted goal: its plan (a DAG of steps grouped in subgoals)\nand the state of every step. Runs are named by id or any unique id prefix.",
		a.runListCmd(), a.runShowCmd(), a.runLogsCmd(), a.runCancelCmd())
}

func (a *app) runListCmd() *cobra.Command {
	var req api.RunsListRequest
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `List runs, newest first, with their status and step progress (steps
done/total). -o json prints a JSON array of run objects (see docs/cli.md),
-o jsonl one run object per line.`,
		Example: `  agentctl run list
  agentctl run list --status running
  agentctl run list --limit 5 -o json | jq -r '.[].id'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Status != "" && !slices.Contains(runStatuses, req.Status) {
				return usagef("--status %q: want one of %s", req.Status, strings.Join(runStatuses, ", "))
			}
			if req.Limit < 0 {
				return usagef("--limit must not be negative")
			}
			return a.runList(cmd.Context(), req)
		},
	}
	cmd.Flags().StringVar(&req.Status, "status", "", "only runs with this status ("+strings.Join(runStatuses, ", ")+")")
	cmd.Flags().IntVar(&req.Limit, "limit", 0, "at most this many runs (0: the node's default)")
	return cmd
}

func (a *app) runList(ctx context.Context, req api.RunsListRequest) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	runs, err := c.RunsList(ctx, req)
	if err != nil {
		return err
	}
	if a.output != formatText {
		return writeList(a, runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(a.env.Stdout, "no runs")
		return nil
	}
	tw := a.table()
	fmt.Fprintln(tw, "ID\tSTATUS\tSTEPS\tCREATED\tGOAL")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, progress(r.Steps), fmtTime(r.CreatedAt), truncate(r.Goal, 60))
	}
	return tw.Flush()
}

// progress is "done/total" where done counts steps that need nothing more.
func progress(steps []api.Step) string {
	done := 0
	for _, s := range steps {
		if s.Status == event.TaskSucceeded || s.Status == event.TaskSkipped {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(steps))
}

func (a *app) runShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a run and its DAG",
		Long: `Show a run: its goal, status and plan revision, then every step grouped by
subgoal with its status, attempt, node, exit code, duration and the steps
it depends on. ID may be any unique prefix of the run id.`,
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
follow that with 'agentctl run show ID'. ID may be any unique prefix.`,
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
	run, err := c.RunsGet(ctx, id)
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
