package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/spf13/cobra"
)

func (a *app) memoryCmd() *cobra.Command {
	return group("memory", "Read and write memory facts",
		`Memory holds scoped facts: scope "shared" for the whole cluster, or a run id
for facts private to one run. Facts can expire (--ttl).`,
		a.memoryPutCmd(), a.memoryGetCmd(), a.memoryLsCmd())
}

// putResult is what memory put prints with -o json.
type putResult struct {
	Event string        `json:"event"`
	Scope string        `json:"scope"`
	Key   string        `json:"key"`
	Value string        `json:"value"`
	TTL   time.Duration `json:"ttl,omitempty"`
}

func (a *app) memoryPutCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "put SCOPE KEY VALUE",
		Short: "Store a fact",
		Long: `Publish a memory.put event, signed with your operator credentials; the
memory role stores the fact (and records memory.written). With --ttl the
fact expires after that long. SCOPE is "shared" or the whole id of a run
the node knows; anything else is refused before it is published.`,
		Example: `  agentctl memory put shared deploy.target staging
  agentctl memory put shared maintenance on --ttl 2h`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if ttl < 0 {
				return usagef("--ttl must not be negative")
			}
			return a.memoryPut(cmd.Context(), event.MemoryPutData{Scope: argv[0], Key: argv[1], Value: argv[2], TTL: event.Duration(ttl)})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "expire the fact after this long (0: never)")
	return cmd
}

func (a *app) memoryPut(ctx context.Context, data event.MemoryPutData) error {
	if data.Scope == "" || data.Key == "" {
		return usagef("SCOPE and KEY must not be empty")
	}
	if err := checkScope(data.Scope); err != nil {
		return err
	}
	if err := memory.CheckFact(data.Key, data.Value); err != nil {
		return usagef("memory put %s/%s: %v", data.Scope, data.Key, err)
	}
	run := ""
	if data.Scope != memory.ScopeShared {
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
		return a.writeJSON(putResult{Event: d.ID, Scope: data.Scope, Key: data.Key, Value: data.Value, TTL: data.TTL.Std()})
	}
	fmt.Fprintf(a.env.Stdout, "memory.put %s/%s published (event %s)\n", data.Scope, data.Key, d.ID)
	return nil
}

// checkScope refuses a SCOPE argument that is neither "shared" nor a run
// id, with the rule the memory role folds by (memory.ValidScope).
func checkScope(scope string) error {
	if err := memory.ValidScope(scope); err != nil {
		return usagef("SCOPE %q is neither %q nor a run id: give shared, or the id of a run (agentctl run list)", scope, memory.ScopeShared)
	}
	return nil
}

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
	return &cobra.Command{
		Use:     "ls [SCOPE]",
		Aliases: []string{"list"},
		Short:   "List facts",
		Long:    `List the facts of SCOPE, or of every scope.`,
		Example: `  agentctl memory ls
  agentctl memory ls shared -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			scope := ""
			if len(argv) == 1 {
				scope = argv[0]
				if err := checkScope(scope); err != nil {
					return err
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			facts, err := c.MemoryList(cmd.Context(), scope)
			if err != nil {
				return err
			}
			if a.output != formatText {
				return writeList(a, facts)
			}
			if len(facts) == 0 {
				fmt.Fprintln(a.env.Stdout, "no facts")
				return nil
			}
			tw := a.table()
			fmt.Fprintln(tw, "SCOPE\tKEY\tVALUE\tUPDATED\tEXPIRES")
			for _, f := range facts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Scope, f.Key, truncate(oneLine(f.Value), 50), fmtTime(f.UpdatedAt), fmtTimePtr(f.ExpiresAt))
			}
			return tw.Flush()
		},
	}
}
