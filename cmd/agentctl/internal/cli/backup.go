package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) nodeBackupCmd() *cobra.Command {
	var out string
	var noArtifacts bool
	cmd := &cobra.Command{
		Use:   "backup NAME --out DIR",
		Short: "Make a running node write a consistent backup of its data directory",
		Long: `Ask node NAME to write an online, consistent backup of its data directory
into DIR on its own machine: DIR is an absolute path there, which must not
exist yet (the node writes DIR.partial, then renames it). The node keeps
working meanwhile; its events wait in its outbox while the copy is made.

The backup holds the ledger, the outbox and the executor's local state
(Pebble checkpoints), the keys and credentials, and, on a node whose
embedded nats-server is all of NATS, snapshots of the agentic streams with
their consumers and of the artifact bucket (agentic_artifacts: every
stored artifact's bytes; --no-artifacts leaves it out when it is large,
and the backup then says so). It holds the cluster root key when the data directory
does: keep it as you keep the root key.

Restore it on the new machine (copy DIR there first):
  agentd --data NEW_DATA_DIR --restore-from DIR [flags as before]

-o json prints what was written.`,
		Example: `  agentctl node backup node-a --out /var/backups/agentic/$(date +%F)
  agentctl node backup node-a --out /srv/backup/a1 -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if out == "" {
				return usagef("node backup: --out is required")
			}
			if !filepath.IsAbs(out) {
				return usagef("node backup: --out %q must be an absolute path (on the node's machine)", out)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			res, err := c.At(argv[0]).NodeBackupWith(cmd.Context(), api.BackupRequest{Out: out, NoArtifacts: noArtifacts})
			if err != nil {
				return fmt.Errorf("node backup %s: %w", argv[0], err)
			}
			if a.output != formatText {
				return a.writeJSON(res)
			}
			w := a.env.Stdout
			fmt.Fprintf(w, "node %s backed up into %s (on its machine) in %s\n", res.Node, res.Dir, res.Took.Round(time.Millisecond))
			if res.LedgerSeq > 0 {
				fmt.Fprintf(w, "  ledger   %d records (stream seq %d)\n", res.LedgerSeq, res.LedgerApplied)
			}
			fmt.Fprintf(w, "  stores   %s\n", strings.Join(res.Stores, ", "))
			fmt.Fprintf(w, "  files    %s\n", strings.Join(res.Files, ", "))
			for _, s := range res.Streams {
				fmt.Fprintf(w, "  stream   %s: %d messages, last seq %d\n", s.Name, s.Messages, s.LastSeq)
			}
			if res.StreamsOmitted != "" {
				fmt.Fprintf(w, "  streams  not included (nor the artifacts): %s\n", res.StreamsOmitted)
			}
			if res.ArtifactsOmitted != "" {
				fmt.Fprintf(w, "  artifacts not included: %s\n", res.ArtifactsOmitted)
			}
			fmt.Fprintf(w, "restore with:\n  agentd --data NEW_DATA_DIR --restore-from %s\n", res.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the backup directory on the node's machine (absolute, must not exist)")
	cmd.Flags().BoolVar(&noArtifacts, "no-artifacts", false, "leave the artifact bucket out of the backup (it may be large)")
	return cmd
}
