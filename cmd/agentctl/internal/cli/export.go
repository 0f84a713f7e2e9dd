package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func (a *app) ledgerExportCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "export [-f FILE]",
		Short: "Write the whole ledger as JSON Lines",
		Long: `Write every ledger record, in order, as JSON Lines: the event's fields
("seq", "stream_seq", "id", "type", "run", "node", "time", "subject",
"data"), its chain hash ("hash", hex), and — on the first record of each
stream message — the signed message exactly as it travelled ("jws") with
its id ("msg_id") and stream time ("msg_time"). An auditor can recompute
the chain (hash = sha256(previous hash || record)) and check every
signature offline. The format is what the ledger package's Import reads.

The node is read in pages, cut by count and size, until the node says the
export has ended: at the ledger's head when the export started. A record
too large for a page comes without its signed message, which agentctl
fetches on its own and puts back, so every line is exactly what the
ledger writes. Without
-f the lines go to stdout; with -f to FILE (progress on stderr).`,
		Example: `  agentctl ledger export > ledger.jsonl
  agentctl ledger export -f /backup/ledger-$(date +%F).jsonl
  agentctl ledger export | jq -c 'select(.type=="event.rejected") | .data'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != formatText {
				return usagef("ledger export always writes JSON Lines; drop -o")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var w io.Writer = rawWriter(a.env.Stdout)
			var f *os.File
			if file != "" {
				if f, err = os.Create(file); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				defer f.Close()
				w = f
			}
			if err := c.Export(cmd.Context(), w, func(n, head uint64) {
				if f != nil {
					fmt.Fprintf(rawWriter(a.env.Stderr), "\rexported %d of %d records", n, head)
				}
			}); err != nil {
				return err
			}
			if f != nil {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				fmt.Fprintf(a.env.Stderr, "\nexported to %s\n", file)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to FILE instead of stdout")
	return cmd
}
