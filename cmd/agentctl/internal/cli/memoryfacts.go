package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) memoryShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show SCOPE KEY",
		Short: "Show a fact and what wrote it",
		Long: `Show a fact: its value, tags, when it was written and expires, whether it is
quarantined and why, and what wrote it — the event (id, ledger seq, type,
signer) and, for a fact a step wrote, the run, step and attempt. The event
itself: agentctl audit --run RUN, or agentctl ledger export.`,
		Example: `  agentctl memory show shared deploy.region
  agentctl memory show family:nightly nginx.version -o json`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			f, err := a.getFact(cmd.Context(), argv[0], argv[1])
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(f)
			}
			a.printFact(f)
			return nil
		},
	}
}

// getFact reads one fact, quarantined or not.
func (a *app) getFact(ctx context.Context, scope, key string) (*api.Fact, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	return c.MemoryGet(ctx, scope, key)
}

// printFact prints a fact for people, one field a line.
func (a *app) printFact(f *api.Fact) {
	tw := a.table()
	fmt.Fprintf(tw, "scope:\t%s\n", f.Scope)
	fmt.Fprintf(tw, "key:\t%s\n", f.Key)
	fmt.Fprintf(tw, "value:\t%s\n", f.Value)
	if len(f.Tags) > 0 {
		fmt.Fprintf(tw, "tags:\t%s\n", strings.Join(f.Tags, ", "))
	}
	fmt.Fprintf(tw, "written:\t%s\n", fmtTime(f.UpdatedAt))
	fmt.Fprintf(tw, "expires:\t%s\n", fmtTimePtr(f.ExpiresAt))
	switch {
	case f.Quarantined:
		fmt.Fprintf(tw, "quarantined:\tyes, %s (release: agentctl memory quarantine release %s %s)\n", f.Reason, f.Scope, f.Key)
	case f.Released != "":
		fmt.Fprintf(tw, "quarantined:\tno, released by %s (was %s)\n", f.Released, f.Reason)
	default:
		fmt.Fprintf(tw, "quarantined:\tno\n")
	}
	if r := f.Refs; r != nil {
		fmt.Fprintf(tw, "event:\t%s %s, seq %d, signed by %s\n", r.Type, r.Event, r.Seq, r.Node)
		if r.Run != "" {
			fmt.Fprintf(tw, "run:\t%s\n", r.Run)
		}
		if r.Step != "" {
			fmt.Fprintf(tw, "step:\t%s, attempt %d\n", r.Step, r.Attempt)
		}
	}
	tw.Flush()
}

// searchResult is what memory search prints with -o json.
type searchResult struct {
	Query string          `json:"query"`
	Total int             `json:"total"`
	Hits  []api.SearchHit `json:"hits"`
	// Next is the --cursor of the next page; "" at the end.
	Next string `json:"next,omitempty"`
}

func (a *app) memorySearchCmd() *cobra.Command {
	var scope, cursor string
	var limit int
	var quarantined bool
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search facts by their words, best first",
		Long: `Rank the live facts by BM25 over their keys, values and tags: facts with more
of the query's words, rarer words, and shorter facts come first. One page
at a time (--limit, at most 100); the next page is --cursor with the cursor
the page ends with. Quarantined facts are left out unless --quarantined.`,
		Example: `  agentctl memory search "nginx reload"
  agentctl memory search nginx --scope shared --limit 5 --cursor 5
  agentctl memory search deploy --quarantined -o json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(argv[0]) == "" {
				return usagef("QUERY is empty: give the words to look for")
			}
			if len(argv[0]) > api.MaxQueryLen {
				return usagef("QUERY is %d bytes: at most %d", len(argv[0]), api.MaxQueryLen)
			}
			if limit < 0 || limit > api.MaxSearchPage {
				return usagef("--limit must be between 1 and %d", api.MaxSearchPage)
			}
			if scope != "" {
				if err := checkScope(scope); err != nil {
					return err
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.MemorySearch(cmd.Context(), api.MemorySearchRequest{Query: argv[0], Scope: scope, Quarantined: quarantined,
				CursorRequest: api.CursorRequest{Cursor: cursor, Limit: limit}})
			if err != nil {
				return fmt.Errorf("memory search: %w", err)
			}
			next := p.Next
			if p.End {
				next = ""
			}
			if a.output != formatText {
				hits := p.Items
				if hits == nil {
					hits = []api.SearchHit{}
				}
				return a.writeJSON(searchResult{Query: argv[0], Total: p.Total, Hits: hits, Next: next})
			}
			if len(p.Items) == 0 {
				fmt.Fprintf(a.env.Stdout, "no facts match %q\n", argv[0])
				return nil
			}
			tw := a.table()
			fmt.Fprintln(tw, "SCORE\tSCOPE\tKEY\tVALUE\tQ")
			for _, h := range p.Items {
				fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\t%s\n", h.Score, h.Fact.Scope, h.Fact.Key, truncate(oneLine(h.Fact.Value), 60), quarantineMark(h.Fact))
			}
			tw.Flush()
			if next != "" {
				fmt.Fprintf(a.env.Stdout, "%d of %d; next page: agentctl memory search %q --cursor %s\n", len(p.Items), p.Total, argv[0], next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scope, "scope", "", "only facts of this scope")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the page after this cursor (printed by the page before)")
	cmd.Flags().IntVar(&limit, "limit", 0, "hits per page (default 20, at most 100)")
	cmd.Flags().BoolVar(&quarantined, "quarantined", false, "include quarantined facts")
	return cmd
}

func (a *app) memoryQuarantineCmd() *cobra.Command {
	return group("quarantine", "List, release or drop quarantined facts",
		`A fact a step wrote starts quarantined when the step did not succeed, when the
run's plan is a model's, or when an operator overrode a policy verdict of the
run (accepted or edited a gated step). Quarantined facts are shown to
operators and never given to plans or prompts (${memory:SCOPE/KEY} refuses
them) until released. Release and drop are events signed by you; the memory
fold is the only judge.`,
		a.quarantineLsCmd(), a.quarantineActCmd("release"), a.quarantineActCmd("drop"))
}

func (a *app) quarantineLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls [SCOPE]",
		Aliases: []string{"list"},
		Short:   "List quarantined facts",
		Long: `List the live quarantined facts of SCOPE, or of every scope: what a failed
step, a model's plan or a run with overridden verdicts wrote, with why.`,
		Example: `  agentctl memory quarantine ls
  agentctl memory quarantine ls family:nightly -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := api.MemoryFactsRequest{Quarantined: true}
			if len(argv) == 1 {
				req.Scope = argv[0]
			}
			return a.listFacts(cmd.Context(), req)
		},
	}
}

// quarantineResult is what quarantine release and drop print with -o json.
type quarantineResult struct {
	Event  string `json:"event"`
	Action string `json:"action"`
	Scope  string `json:"scope"`
	Key    string `json:"key"`
	Seq    uint64 `json:"seq"`
}

// quarantineActCmd is memory quarantine release or drop.
func (a *app) quarantineActCmd(action string) *cobra.Command {
	var reason string
	typ, short := event.MemoryReleased, "Release a quarantined fact to plans and prompts"
	long := `Publish memory.released for the fact as you see it now (its ledger seq): a
fact written again since stays as it is. The fact must be quarantined.`
	if action == "drop" {
		typ, short = event.MemoryDropped, "Remove a fact, quarantined or not"
		long = `Publish memory.dropped for the fact as you see it now (its ledger seq): a
fact written again since stays as it is.`
	}
	cmd := &cobra.Command{
		Use:     action + " SCOPE KEY",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  agentctl memory quarantine %s shared deploy.region --reason \"checked by hand\"", action),
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			f, err := a.getFact(ctx, argv[0], argv[1])
			if errors.Is(err, api.ErrNotFound) {
				return api.WithHint(fmt.Errorf("memory quarantine %s: no live fact %s/%s", action, argv[0], argv[1]), "list them with: agentctl memory quarantine ls")
			}
			if err != nil {
				return fmt.Errorf("memory quarantine %s %s/%s: %w", action, argv[0], argv[1], err)
			}
			if action == "release" && !f.Quarantined {
				return fmt.Errorf("memory quarantine release: %s/%s is not quarantined", f.Scope, f.Key)
			}
			data := event.MemoryQuarantineData{Scope: f.Scope, Key: f.Key, Reason: reason}
			if f.Refs != nil {
				data.Seq = f.Refs.Seq
			}
			run := ""
			if event.ValidRunID(f.Scope) == nil && f.Scope != "shared" {
				run = f.Scope
			}
			d, err := event.NewDraft(typ, run, data)
			if err != nil {
				return err
			}
			if err := a.publish(ctx, d); err != nil {
				return fmt.Errorf("memory quarantine %s %s/%s: %w", action, f.Scope, f.Key, err)
			}
			if a.output != formatText {
				return a.writeJSON(quarantineResult{Event: d.ID, Action: action, Scope: f.Scope, Key: f.Key, Seq: data.Seq})
			}
			fmt.Fprintf(a.env.Stdout, "%s %s/%s published (event %s)\n", typ, f.Scope, f.Key, d.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit")
	return cmd
}
