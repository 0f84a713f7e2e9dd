package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/spf13/cobra"
)

func (a *app) runReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "replay ID",
		Short: "Check a run's recorded decisions against this build's scheduling code",
		Long: `Refold the ledger from its first event with side effects off — nothing is
published, nothing runs, no model is called: recorded step results and
plans are events like the others — and, for every decision the leaders
recorded for run ID (plan accepted, step assigned or cancelled, gate
opened or closed, run finished), decide again on the same state, at the
same time, with the same epoch, and compare. Every decision is reported
reproduced or diverged (missing, or made with another payload).

Every event of the ledger up to the run's end is read (other runs share
the executors), through the export's pages without signed messages;
progress goes to stderr. Exit 1 when anything diverged: use it to check
an upgrade against real history before rolling it out.`,
		Example: `  agentctl run replay 0190a3c2
  agentctl run replay 0190a3c2 -o json | jq '.divergences'`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			run, err := c.RunSummary(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			progress := func(uint64, uint64) {}
			if isTerminal(a.env.Stderr) {
				progress = func(seq, head uint64) { fmt.Fprintf(rawWriter(a.env.Stderr), "\rfolded %d of %d events", seq, head) }
			}
			rep, err := replay.Check(c.Events(cmd.Context(), 0, progress), replay.Options{Run: run.ID})
			if isTerminal(a.env.Stderr) {
				fmt.Fprintln(a.env.Stderr)
			}
			if err != nil {
				return err
			}
			if a.output != formatText {
				if err := a.writeJSON(rep); err != nil {
					return err
				}
			} else {
				renderReplay(a.env.Stdout, run.ID, rep)
			}
			if rep.Diverged() {
				return &exitError{code: ExitError}
			}
			return nil
		},
	}
}

// renderReplay prints a replay's report for people.
func renderReplay(w io.Writer, run string, rep *replay.Report) {
	fmt.Fprintf(w, "run %s: %d decisions checked over %d events", run, rep.Checked, rep.Events)
	if rep.Finished != "" {
		fmt.Fprintf(w, " (run %s)", rep.Finished)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  reproduced    %d\n", rep.Reproduced)
	if rep.Fenced > 0 {
		fmt.Fprintf(w, "  fenced        %d (decisions of deposed leaders, without effect)\n", rep.Fenced)
	}
	if rep.Unverifiable > 0 {
		fmt.Fprintf(w, "  unverifiable  %d (landed more than %d events after the state they were made on)\n", rep.Unverifiable, replay.Window)
	}
	if !rep.Diverged() {
		fmt.Fprintln(w, "no divergence: this build decides as the recorded leaders did")
		return
	}
	fmt.Fprintf(w, "  diverged      %d\n", len(rep.Divergences))
	for _, d := range rep.Divergences {
		fmt.Fprintf(w, "\nseq %d %s %s\n  %s\n  recorded: %s\n", d.Seq, d.Type, d.ID, d.Problem, strings.TrimSpace(string(d.Recorded)))
		if len(d.Now) > 0 {
			fmt.Fprintf(w, "  now:      %s\n", strings.TrimSpace(string(d.Now)))
		}
	}
}
