package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/spf13/cobra"
)

func (a *app) memoryCmd() *cobra.Command {
	return group("memory", "Read, write, search and release memory facts",
		`Memory holds scoped facts: scope "shared" for the whole cluster, a run id for
facts private to one run, or "family:NAME" for the runs whose plan names that
family. Facts can expire (--ttl) and carry tags (--tag). Every fact records
what wrote it (memory show). Facts a failed step, a model's plan or a run with
overridden verdicts wrote start quarantined: listed here, never given to plans
or prompts until released (memory quarantine). See docs/memory.md.`,
		a.memoryPutCmd(), a.memoryGetCmd(), a.memoryShowCmd(), a.memoryLsCmd(), a.memorySearchCmd(), a.memoryQuarantineCmd())
}

// putResult is what memory put prints with -o json.
type putResult struct {
	Event string        `json:"event"`
	Scope string        `json:"scope"`
	Key   string        `json:"key"`
	Value string        `json:"value"`
	TTL   time.Duration `json:"ttl,omitempty"`
	Tags  []string      `json:"tags,omitempty"`
}

func (a *app) memoryPutCmd() *cobra.Command {
	var ttl time.Duration
	var tags []string
	cmd := &cobra.Command{
		Use:   "put SCOPE KEY VALUE",
		Short: "Store a fact",
		Long: `Publish a memory.put event, signed with your operator credentials; the
memory role stores the fact (and records memory.written). With --ttl the
fact expires after that long; each --tag labels it (memory ls --tag). SCOPE
is "shared", "family:NAME" or the whole id of a run the node knows; anything
else is refused before it is published.`,
		Example: `  agentctl memory put shared deploy.target staging
  agentctl memory put shared deploy.region eu-west --ttl 24h --tag infra
  agentctl memory put family:nightly last.good v1.4.2`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if ttl < 0 {
				return usagef("--ttl must not be negative")
			}
			if err := event.ValidTags(tags); err != nil {
				return usagef("--tag: %v", err)
			}
			return a.memoryPut(cmd.Context(), event.MemoryPutData{Scope: argv[0], Key: argv[1], Value: argv[2], TTL: event.Duration(ttl), Tags: tags})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "expire the fact after this long (0: never)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "label the fact (repeat for several)")
	return cmd
}

func (a *app) memoryPut(ctx context.Context, data event.MemoryPutData) error {
	if data.Scope == "" || data.Key == "" {
		return usagef("SCOPE and KEY must not be empty")
	}
	if err := checkScope(data.Scope); err != nil {
		return err
	}
	if data.Scope == memory.ScopeKB {
		return usagef("SCOPE kb holds research notes, which only synthesise steps write: give shared, family:NAME or a run id")
	}
	if err := memory.CheckFact(data.Key, data.Value); err != nil {
		return usagef("memory put %s/%s: %v", data.Scope, data.Key, err)
	}
	run := ""
	if data.Scope != memory.ScopeShared && !isFamily(data.Scope) {
		if err := a.checkRunScope(ctx, data.Scope); err != nil {
			return err
		}
		run = data.Scope // a run-private fact belongs to its run
	}
	d, err := event.NewDraft(event.MemoryPut, run, data)
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("memory put %s/%s: %w", data.Scope, data.Key, err)
	}
	if a.output != formatText {
		return a.writeJSON(putResult{Event: d.ID, Scope: data.Scope, Key: data.Key, Value: data.Value, TTL: data.TTL.Std(), Tags: data.Tags})
	}
	fmt.Fprintf(a.env.Stdout, "memory.put %s/%s published (event %s)\n", data.Scope, data.Key, d.ID)
	return nil
}

// checkScope refuses a SCOPE argument that is neither "shared" nor a run
// id, with the rule the memory role folds by (memory.ValidScope).
func checkScope(scope string) error {
	if err := memory.ValidScope(scope); err != nil {
		if isFamily(scope) {
			return usagef("SCOPE %q: %v", scope, errors.Unwrap(err))
		}
		return usagef("SCOPE %q is neither %q nor a run id: give shared, family:NAME, or the id of a run (agentctl run list)", scope, memory.ScopeShared)
	}
	return nil
}

// isFamily reports whether scope names a plan family.
func isFamily(scope string) bool { return strings.HasPrefix(scope, event.FamilyScopePrefix) }

// checkRunScope makes sure scope is the whole id of a run the node knows:
// a fact for no run, or for a prefix, could never be read by that run.
func (a *app) checkRunScope(ctx context.Context, scope string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunSummary(ctx, scope)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return api.WithHint(fmt.Errorf("memory put: scope %q is neither %q nor the id of a run: no run has that id", scope, memory.ScopeShared),
			"list runs with: agentctl run list")
	case errors.Is(err, api.ErrAmbiguous):
		return fmt.Errorf("memory put: scope %q must be a whole run id: %w", scope, err)
	case err != nil:
		return fmt.Errorf("memory put: check run %s: %w", scope, err)
	case run.ID != scope:
		return usagef("SCOPE %q is a prefix of run %s: give the whole run id", scope, run.ID)
	}
	return nil
}

func (a *app) memoryGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get SCOPE KEY",
		Short: "Print a fact's value",
		Long: `Print the value of a fact (text: the value alone, for scripts; -o json: the
fact object {"scope","key","value","updated_at","expires_at"}).`,
		Example: `  agentctl memory get shared deploy.target
  agentctl memory get 0190a3c2-… build.cache -o json`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkScope(argv[0]); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.MemoryGet(cmd.Context(), argv[0], argv[1])
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(f)
			}
			fmt.Fprintln(a.env.Stdout, f.Value)
			return nil
		},
	}
}

func (a *app) memoryLsCmd() *cobra.Command {
	var prefix, tag string
	cmd := &cobra.Command{
		Use:     "ls [SCOPE]",
		Aliases: []string{"list"},
		Short:   "List facts",
		Long: `List the live facts of SCOPE, or of every scope, by scope and key: those whose
key starts with --prefix and that carry --tag. Quarantined facts are listed
and marked (Q); memory quarantine ls lists them alone.`,
		Example: `  agentctl memory ls
  agentctl memory ls shared --prefix deploy. --tag infra
  agentctl memory ls shared -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := api.MemoryFactsRequest{Prefix: prefix, Tag: tag}
			if len(argv) == 1 {
				req.Scope = argv[0]
			}
			return a.listFacts(cmd.Context(), req)
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only keys that start with this")
	cmd.Flags().StringVar(&tag, "tag", "", "only facts with this tag")
	return cmd
}

// listFacts prints every page of facts req selects.
func (a *app) listFacts(ctx context.Context, req api.MemoryFactsRequest) error {
	if req.Scope != "" {
		if err := checkScope(req.Scope); err != nil {
			return err
		}
	}
	if req.Tag != "" {
		if err := event.ValidTag(req.Tag); err != nil {
			return usagef("--tag: %v", err)
		}
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	facts := []api.Fact{}
	fetch := func(ctx context.Context, cursor string) (*api.Page[api.Fact], error) {
		r := req
		r.Cursor = cursor
		return c.MemoryFacts(ctx, r)
	}
	for f, err := range api.Walk(ctx, "", fetch) {
		if err != nil {
			return fmt.Errorf("memory ls: %w", err)
		}
		facts = append(facts, f)
	}
	if a.output != formatText {
		return writeList(a, facts)
	}
	if len(facts) == 0 {
		fmt.Fprintln(a.env.Stdout, "no facts")
		return nil
	}
	tw := a.table()
	fmt.Fprintln(tw, "SCOPE\tKEY\tVALUE\tTAGS\tUPDATED\tEXPIRES\tQ")
	for _, f := range facts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Scope, f.Key, truncate(oneLine(f.Value), 50), strings.Join(f.Tags, ","),
			fmtTime(f.UpdatedAt), fmtTimePtr(f.ExpiresAt), quarantineMark(f))
	}
	return tw.Flush()
}

// quarantineMark is "Q" for a quarantined fact.
func quarantineMark(f api.Fact) string {
	if f.Quarantined {
		return "Q"
	}
	return ""
}
