package cli

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) alarmCmd() *cobra.Command {
	return group("alarm", "List the alarms in force in the cluster",
		`A node raises an alarm (alarm.raised, in the ledger) once when one of its
readiness checks that carries one fails — NOSPACE, CORRUPT,
STREAM_MISSING, STREAM_DRIFT, CONSUMER_MISSING, CLOCK_SKEW — and clears
it (alarm.cleared) once when the cause is gone.`,
		a.alarmLsCmd())
}

func (a *app) alarmLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the alarms in force, per node",
		Long: `List the alarms raised and not cleared since, by node then code, as the
answering ledger node folded them from the ledger: the node, the alarm's
code, the readiness check that raised it, since when the node saw the
fault, and why.

-o json prints a JSON array of alarm objects (see docs/cli.md), -o jsonl
one per line.`,
		Example: `  agentctl alarm ls
  agentctl alarm ls -o json | jq -r '.[] | select(.alarm == "NOSPACE") | .node'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			alarms, err := c.Alarms(cmd.Context())
			if err != nil {
				return err
			}
			if a.output != formatText {
				return writeList(a, alarms)
			}
			return a.renderAlarms(alarms, time.Now())
		},
	}
}

func (a *app) renderAlarms(alarms []api.Alarm, now time.Time) error {
	if len(alarms) == 0 {
		_, err := fmt.Fprintln(a.env.Stdout, "no alarms in force")
		return err
	}
	w := a.table()
	fmt.Fprintln(w, "NODE\tALARM\tCHECK\tSINCE\tREASON")
	for _, al := range alarms {
		since := al.Since
		if since.IsZero() {
			since = al.Raised
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", al.Node, al.Alarm, dash(al.Check), fmtSince(since, now), dash(al.Reason))
	}
	return w.Flush()
}
