package cli

import (
	"bufio"
	"context"
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
			var w io.Writer = a.env.Stdout
			var f *os.File
			if file != "" {
				if f, err = os.Create(file); err != nil {
					return fmt.Errorf("ledger export: %w", err)
				}
				defer f.Close()
				w = f
			}
			if err := exportLedger(cmd.Context(), c, w, func(n, head uint64) {
				if f != nil {
					fmt.Fprintf(a.env.Stderr, "\rexported %d of %d records", n, head)
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

// exportLedger writes the node's export to w, page after page until the
// node says it has ended (at the head it had when the first page was
// read), each line exactly as ledger.Store.Export writes it; progress is
// called after each page with the records written and that head.
func exportLedger(ctx context.Context, c *api.Client, w io.Writer, progress func(n, head uint64)) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var last, n, head uint64
	fetch := func(ctx context.Context, cursor string) (*api.Page[api.ExportLine], error) {
		if cursor != "" {
			progress(n, head)
		}
		p, err := c.LedgerExport(ctx, api.ExportRequest{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		if cursor == "" {
			head = p.Head
		}
		return &p.Page, nil
	}
	for l, err := range api.Walk(ctx, "", fetch) {
		if err != nil {
			return fmt.Errorf("ledger export after record %d: %w", last, err)
		}
		if _, err := bw.Write(append(l.Line, '\n')); err != nil {
			return fmt.Errorf("ledger export: %w", err)
		}
		last, n = l.Seq, n+1
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ledger export: %w", err)
	}
	progress(n, head)
	return nil
}
