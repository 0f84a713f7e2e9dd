package cli

import (
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/spf13/cobra"
)

// The knowledge base: research notes (docs/memory.md, "Research and
// notes"). Notes are facts of scope kb whose key is the note's id, so kb
// ls and kb show are memory.facts and memory.get of that scope.

func (a *app) kbCmd() *cobra.Command {
	return group("kb", "List and show research notes",
		`Research notes are claims a planner's model drew from the sources a research
step fetched (kind: research, then kind: synthesise), each citing its sources
by content hash with a quote the planner found in them. A critical claim
needs two independent sources (distinct hosts and content hashes), else it
stays quarantined; notes of a model's plan start quarantined. Quarantined
notes are listed here and never reach a prompt until released:
agentctl memory quarantine release kb NOTE. See docs/memory.md.`,
		a.kbLsCmd(), a.kbShowCmd())
}

// kbPage is what kb ls prints with -o json: one page of notes.
type kbPage struct {
	Notes []api.Fact `json:"notes"`
	// Next is the --cursor of the next page; "" at the end.
	Next string `json:"next,omitempty"`
}

func (a *app) kbLsCmd() *cobra.Command {
	var run, cursor string
	var limit int
	var quarantined bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List research notes, a page at a time",
		Long: `List the research notes by id (run/step/n): claim, confidence, citations,
and Q for a quarantined one. One page at a time (--limit, at most 1000); the
next page is --cursor with the cursor the page ends with. --run keeps one
run's notes, --quarantined the quarantined ones.`,
		Example: `  agentctl kb ls
  agentctl kb ls --run 01a2268b-dd1c-74fe-af3f-3bcebf8c0b1e --quarantined
  agentctl kb ls --limit 50 --cursor NEXT -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 || limit > api.MaxFactsPage {
				return usagef("--limit must be between 1 and %d", api.MaxFactsPage)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			prefix := ""
			if run != "" {
				prefix = run + "/"
			}
			p, err := c.MemoryFacts(cmd.Context(), api.MemoryFactsRequest{Scope: memory.ScopeKB, Prefix: prefix, Quarantined: quarantined,
				CursorRequest: api.CursorRequest{Cursor: cursor, Limit: limit}})
			if err != nil {
				return fmt.Errorf("kb ls: %w", err)
			}
			next := p.Next
			if p.End {
				next = ""
			}
			if a.output != formatText {
				notes := p.Items
				if notes == nil {
					notes = []api.Fact{}
				}
				return a.writeJSON(kbPage{Notes: notes, Next: next})
			}
			if len(p.Items) == 0 {
				fmt.Fprintln(a.env.Stdout, "no notes")
				return nil
			}
			tw := a.table()
			fmt.Fprintln(tw, "NOTE\tCLAIM\tCONFIDENCE\tCITATIONS\tCRITICAL\tQ")
			for _, f := range p.Items {
				conf, cites, crit := "", 0, ""
				if n := f.Note; n != nil {
					conf, cites = fmt.Sprintf("%.2f", n.Confidence), len(n.Citations)
					if n.Critical {
						crit = "yes"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", f.Key, truncate(oneLine(f.Value), 60), conf, cites, crit, quarantineMark(f))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if next != "" {
				fmt.Fprintf(a.env.Stdout, "more: agentctl kb ls --cursor %s\n", next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only the notes of this run")
	cmd.Flags().BoolVar(&quarantined, "quarantined", false, "only the quarantined notes")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the cursor a page ended with: the next page")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("notes a page (default %d, at most %d)", api.DefaultFactsPage, api.MaxFactsPage))
	return cmd
}

func (a *app) kbShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NOTE",
		Short: "Show a research note: its claim, citations and quarantine",
		Long: `Show a research note: the question it answers, its claim and confidence,
whether it is critical and quarantined (and why), each citation (the
source's URL, content hash and the quote found in it), and what wrote it —
the kb.noted event and the synthesise step.`,
		Example: `  agentctl kb show 01a2268b-dd1c-74fe-af3f-3bcebf8c0b1e/notes/1
  agentctl kb show 01a2268b-dd1c-74fe-af3f-3bcebf8c0b1e/notes/1 -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			f, err := a.getFact(cmd.Context(), memory.ScopeKB, argv[0])
			if err != nil {
				return fmt.Errorf("kb show %s: %w", argv[0], err)
			}
			if a.output != formatText {
				return a.writeJSON(f)
			}
			a.printNote(f)
			return nil
		},
	}
}

// printNote prints a note for people.
func (a *app) printNote(f *api.Fact) {
	tw := a.table()
	fmt.Fprintf(tw, "note:\t%s\n", f.Key)
	n := f.Note
	if n != nil && n.Question != "" {
		fmt.Fprintf(tw, "question:\t%s\n", n.Question)
	}
	fmt.Fprintf(tw, "claim:\t%s\n", f.Value)
	if n != nil {
		crit := "no"
		if n.Critical {
			crit = "yes: needs two independent sources"
		}
		fmt.Fprintf(tw, "confidence:\t%.2f\n", n.Confidence)
		fmt.Fprintf(tw, "critical:\t%s\n", crit)
	}
	switch {
	case f.Quarantined:
		fmt.Fprintf(tw, "quarantined:\tyes, %s (release: agentctl memory quarantine release kb %s)\n", f.Reason, f.Key)
	case f.Released != "":
		fmt.Fprintf(tw, "quarantined:\tno, released by %s (was %s)\n", f.Released, f.Reason)
	default:
		fmt.Fprintf(tw, "quarantined:\tno\n")
	}
	fmt.Fprintf(tw, "written:\t%s\n", fmtTime(f.UpdatedAt))
	if r := f.Refs; r != nil {
		fmt.Fprintf(tw, "event:\t%s %s, seq %d, signed by %s\n", r.Type, r.Event, r.Seq, r.Node)
		fmt.Fprintf(tw, "step:\t%s (run %s), attempt %d\n", r.Step, r.Run, r.Attempt)
	}
	tw.Flush()
	if n == nil {
		return
	}
	fmt.Fprintf(a.env.Stdout, "citations (%d", len(n.Citations))
	if n.Dropped > 0 {
		fmt.Fprintf(a.env.Stdout, "; %d dropped: quote not in its source", n.Dropped)
	}
	fmt.Fprintln(a.env.Stdout, "):")
	for i, c := range n.Citations {
		fmt.Fprintf(a.env.Stdout, "  %d. %s\n     sha256 %s\n     %q\n", i+1, c.URL, c.SHA256, strings.TrimSpace(c.Quote))
	}
}
