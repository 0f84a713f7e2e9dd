package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) runRateCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "rate ID up|down [--reason TEXT]",
		Short: "Rate a run up or down: the feedback the telemetry export and the improvement loop read",
		Long: `Publish a run.rated event, signed with your operator credentials: your
judgement of the run, up or down, with an optional reason. A run may be
rated while it runs or after it ended, as often as you like; 'agentctl run
show ID' prints its ratings, and 'agentctl telemetry export' gives each as
a feedback line. ID may be any unique start or end of the run id.`,
		Example: `  agentctl run rate 0190a3c2 down --reason "deployed to the wrong region"
  agentctl run rate 0190a3c2 up`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runRate(cmd.Context(), argv[0], argv[1], reason)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return cmd
}

// rateResult is what run rate prints with -o json.
type rateResult struct {
	Run    string       `json:"run"`
	Rating event.Rating `json:"rating"`
	Event  string       `json:"event"`
	Reason string       `json:"reason,omitempty"`
}

// runRate publishes run.rated for a run the cluster knows.
func (a *app) runRate(ctx context.Context, id, rating, reason string) error {
	r, err := event.ParseRating(rating)
	if err != nil {
		return api.WithHint(fmt.Errorf("run rate: %q is not a rating (nothing was published)", rating),
			"rate a run up or down: agentctl run rate ID up|down [--reason TEXT]")
	}
	me, _, err := a.identity()
	if err != nil {
		return err
	}
	data := event.RunRatedData{Rating: r, Reason: reason, Operator: me.ID}
	if err := data.Validate(); err != nil {
		return fmt.Errorf("run rate: %w (nothing was published)", err)
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunSummary(ctx, id)
	if err != nil {
		return fmt.Errorf("run rate %s (nothing was published): %w", id, err)
	}
	d, err := event.NewDraft(event.RunRated, run.ID, data)
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("rate run %s: %w", run.ID, err)
	}
	if a.output != formatText {
		return a.writeJSON(rateResult{Run: run.ID, Rating: r, Event: d.ID, Reason: reason})
	}
	fmt.Fprintf(a.env.Stdout, "rated run %s %s (event %s)\n", run.ID, r, d.ID)
	return nil
}

// renderRatings prints a run's ratings under its header: one line each,
// oldest first, after a count of the older ones left out.
func renderRatings(w io.Writer, r *api.Run) {
	if len(r.Ratings) == 0 {
		return
	}
	if r.RatingsMore {
		fmt.Fprintf(w, "rated     (older ratings left out; agentctl audit tail --run %s --type run.rated lists them)\n", r.ID)
	}
	for _, rt := range r.Ratings {
		line := fmt.Sprintf("%s by %s at %s", rt.Rating, rt.Operator, fmtTime(rt.At))
		if rt.Reason != "" {
			line += ": " + strings.TrimSpace(rt.Reason)
		}
		fmt.Fprintf(w, "rated     %s\n", line)
	}
}
