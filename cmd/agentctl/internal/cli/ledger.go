package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) ledgerCmd() *cobra.Command {
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Verify the ledger's hash chain on a node",
		Long: `Ask a node to recompute its ledger's hash chain from the first event and
re-verify every event's signature against the message it came in. It
prints ok, the number of events and the head hash, or the first bad seq;
the exit code is 1 when the chain does not verify. A large ledger takes a
while (roughly 10,000 events a second); agentctl waits up to 10 minutes.

-o json prints {"ok","events","head"} plus "first_bad_seq" and "error" on
failure, and "node" (the node that answered).`,
		Example: `  agentctl ledger verify
  agentctl ledger verify -o json | jq .head`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.LedgerVerify(cmd.Context())
			if err != nil {
				return err
			}
			if a.output != formatText {
				if err := a.writeJSON(v); err != nil {
					return err
				}
			} else if v.OK {
				fmt.Fprintf(a.env.Stdout, "ok: %d events, head %s%s\n", v.Events, dash(v.Head), onNode(v.Node))
			} else {
				fmt.Fprintf(a.env.Stdout, "FAILED: first bad seq %d of %d events%s%s\n", v.FirstBadSeq, v.Events, because(v.Error), onNode(v.Node))
			}
			if !v.OK {
				return &exitError{code: ExitError}
			}
			return nil
		},
	}
	return group("ledger", "Check and export the event ledger", "The ledger is the hash-chained, append-only log every node folds.", verify, a.ledgerExportCmd())
}

func onNode(n string) string {
	if n == "" {
		return ""
	}
	return " (node " + n + ")"
}
