package cli

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) ledgerCmd() *cobra.Command {
	var all bool
	var wait time.Duration
	verify := &cobra.Command{
		Use:   "verify [--all]",
		Short: "Verify the ledger's hash chain on a node, or compare the ledger nodes",
		Long: `Ask a node to recompute its ledger's hash chain from the first event and
re-verify every event's signature against the message it came in. It
prints ok, the number of events and the head hash, or the first bad seq;
the exit code is 1 when the chain does not verify. A large ledger takes a
while (roughly 10,000 events a second); agentctl waits up to 10 minutes.

-o json prints {"ok","events","head"} plus "first_bad_seq" and "error" on
failure, and "node" (the node that answered).

--all compares the ledger nodes instead: every ledger node that answers
within --wait gives its head (seq and hash); each is then asked for its
chain hash at the lowest head of them all, the common seq. A chain hash
covers every record up to it, so equal hashes there mean equal ledgers up
to it. The table shows each node, its head seq and its hash at the common
seq, and whether it agrees: whether another node has the same hash (a
lone node agrees with itself). The exit code is 1 when any node does not
agree or does not answer the second question. -o json prints {"agree",
"common_seq","nodes":[{"node","head_seq","head_hash","applied_stream_seq",
"hash","agrees","error"}]}.`,
		Example: `  agentctl ledger verify
  agentctl ledger verify -o json | jq .head
  agentctl ledger verify --all
  agentctl ledger verify --all --wait 3s -o json | jq '.nodes[] | select(.agrees | not) | .node'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if all {
				return a.verifyAll(cmd, c, wait)
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
	verify.Flags().BoolVar(&all, "all", false, "compare the head hashes of every ledger node")
	verify.Flags().DurationVar(&wait, "wait", api.DefaultGatherWait, "with --all: how long to collect the ledger nodes' answers")
	return group("ledger", "Check and export the event ledger", "The ledger is the hash-chained, append-only log every node folds.", verify, a.ledgerExportCmd())
}

func onNode(n string) string {
	if n == "" {
		return ""
	}
	return " (node " + n + ")"
}
