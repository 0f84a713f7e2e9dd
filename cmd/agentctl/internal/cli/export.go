package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/agentic-dev/agentic/node/api"
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

The node is read in pages; the export is of the ledger as it was when each
page was read, and ends at the head seen when the export started. Without
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
			var w io.Writer = a.env.Stdout
			var f *os.File
			if file != "" {
				if f, err = os.Create(file); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				defer f.Close()
				w = f
			}
			var after, head, n uint64
			for {
				p, err := c.LedgerExport(cmd.Context(), api.ExportRequest{After: after})
				if err != nil {
					return fmt.Errorf("ledger export after record %d: %w", after, err)
				}
				if head == 0 {
					head = p.Head
				}
				if p.Last == 0 {
					break
				}
				if _, err := io.WriteString(w, p.JSONL); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				n += p.Last - after
				after = p.Last
				if f != nil {
					fmt.Fprintf(a.env.Stderr, "\rexported %d of %d records", n, head)
				}
				if after >= head {
					break
				}
			}
			if f != nil {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				fmt.Fprintf(a.env.Stderr, "\rexported %d records to %s\n", n, file)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to FILE instead of stdout")
	return cmd
}
