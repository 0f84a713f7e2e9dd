package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/spf13/cobra"
)

func (a *app) policyShowCmd() *cobra.Command {
	var version int64
	c := &cobra.Command{
		Use:         "show [--version N]",
		Annotations: map[string]string{"formats": formatYAML},
		Short:       "Print the policy in force (or one version of it) as the ledger holds it",
		Long: `Print the text of the policy in force, exactly as it was applied, read from
the ledger by any ledger node: what 'agentctl policy apply -f -' takes back
unchanged. --version N prints an earlier version ('agentctl policy history'
lists them).

-o yaml is the same text. -o json prints the version object: version,
hash, name, source (apply, bootstrap or remember), reason, signer, time,
ledger seq, the run and step of a remembered approval, and the text.`,
		Example: `  agentctl policy show > policy.yaml
  agentctl policy show --version 2
  agentctl policy show | agentctl policy apply -f - --reason 'unchanged'
  agentctl policy show -o json | jq -r .hash`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version < 0 {
				return usagef("--version must be 1 or more (or 0: the version in force), got %d", version)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := policyShow(cmd.Context(), c, version)
			if err != nil {
				return err
			}
			if a.output != formatText && a.output != formatYAML {
				return a.writeJSON(v)
			}
			text := v.Text
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			_, err = io.WriteString(a.env.Stdout, text)
			return err
		},
	}
	c.Flags().Int64Var(&version, "version", 0, "the version to print (default: the one in force)")
	return c
}

// policyShow asks policy.show for version v (0: the one in force).
func policyShow(ctx context.Context, c *api.Client, v int64) (*api.PolicyVersion, error) {
	var out api.PolicyVersion
	if err := c.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{Version: v}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// applyResult is what policy apply prints with -o json.
type applyResult struct {
	event.PolicyRef
	Name string `json:"name,omitempty"`
	// Base is the version the apply replaced.
	Base int64 `json:"base"`
	// Event is the policy.applied event's id ("" when nothing was
	// applied: the policy in force is already this one).
	Event string `json:"event,omitempty"`
	// InForce is false when the apply was published without waiting.
	InForce bool `json:"in_force"`
}

func (a *app) policyApplyCmd() *cobra.Command {
	var file, reason string
	var wait bool
	c := &cobra.Command{
		Use:   "apply -f FILE|- [--reason TEXT]",
		Short: "Make a policy file the policy in force, recorded in the ledger",
		Long: `Check the policy file (every problem is reported with its line, and
nothing is published), read the version in force, and publish a
policy.applied event replacing it, signed with your credentials (role
admin). Every node then judges with the new version, and every verdict
names it. Then wait (up to --timeout; --wait=false returns once a ledger
node accepted the event) until the ledger shows the new version, and print
its number and hash.

Two applies made at the same time on the same version cannot both win:
the ledger takes the first, and the other is reported here, with the
version that took its place, and changes nothing; look at the policy in
force and apply again. A file equal in meaning to the policy in force
(the same hash: comments, key order and flag spelling do not count) is
not applied again.

-f - reads the policy from standard input.`,
		Example: `  agentctl policy check --file policy.yaml 'rm -rf ./build'   # try it first
  agentctl policy apply -f policy.yaml --reason 'gate package removal'
  agentctl policy show | sed 's/default: allow/default: confirm/' | agentctl policy apply -f -`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("policy apply: -f FILE (or - for standard input) is required")
			}
			return a.policyApply(cmd.Context(), file, reason, wait)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the policy file (YAML), or - for standard input")
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	c.Flags().BoolVar(&wait, "wait", true, "wait until the ledger shows the new version in force")
	return c
}

// policyApply applies the policy in file on the version in force.
func (a *app) policyApply(ctx context.Context, file, reason string, wait bool) error {
	name, data, err := a.readPolicyFile(file)
	if err != nil {
		return err
	}
	p, err := policy.Parse(data, name)
	if err != nil {
		return fmt.Errorf("policy %s is invalid (nothing was applied):\n%w", name, err)
	}
	id, _, err := a.identity()
	if err != nil {
		return err
	}
	if !slices.Contains(id.Roles, trust.AdminRole) {
		return api.WithHint(fmt.Errorf("policy apply: credentials %s (%s, roles %v) are not an administrator's: applying a policy needs role admin (nothing was applied)", a.credsPath(), id.ID, id.Roles),
			"the operator.creds next to root.key is an administrator's; or issue one: agentctl keys operator NAME --role admin --root DIR --out FILE")
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	var base int64
	in, err := policyShow(ctx, c, 0)
	switch {
	case errors.Is(err, api.ErrNotFound):
	case err != nil:
		return fmt.Errorf("policy apply: read the version in force (nothing was applied): %w", err)
	default:
		base = in.Version
		if in.Hash == p.Hash() {
			return a.printApplied(applyResult{PolicyRef: in.PolicyRef, Name: in.Name, Base: base, InForce: true},
				fmt.Sprintf("policy version %d in force already is this policy (%s): nothing applied\n", in.Version, in.Hash))
		}
	}
	d, err := event.NewDraft(event.PolicyApplied, "", event.PolicyAppliedData{
		Base: base, Name: p.Name, Hash: p.Hash(), Text: string(data), Source: event.PolicyFromApply, Reason: reason,
	})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("policy apply: %w", err)
	}
	res := applyResult{PolicyRef: event.PolicyRef{Version: base + 1, Hash: p.Hash()}, Name: p.Name, Base: base, Event: d.ID}
	if !wait {
		return a.printApplied(res, fmt.Sprintf("policy.applied published on version %d (event %s): it is version %d once a ledger folds it, unless another apply took that version first (agentctl policy show)\n", base, d.ID, base+1))
	}
	v, err := a.waitPolicy(ctx, base+1, p.Hash(), d.ID)
	if err != nil {
		return err
	}
	res.InForce = true
	return a.printApplied(res, fmt.Sprintf("policy version %d in force: %s (name %s, applied by %s, event %s)\n", v.Version, v.Hash, dash(v.Name), v.Signer, d.ID))
}

// readPolicyFile reads a policy file, or standard input for "-", and
// names it for errors.
func (a *app) readPolicyFile(file string) (string, []byte, error) {
	if file == "-" {
		data, err := io.ReadAll(a.env.Stdin)
		if err != nil {
			return "", nil, fmt.Errorf("read the policy from standard input: %w", err)
		}
		return "stdin", data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, fmt.Errorf("read policy: %w", err)
	}
	return file, data, nil
}

func (a *app) printApplied(res applyResult, text string) error {
	if a.output != formatText {
		return a.writeJSON(res)
	}
	_, err := io.WriteString(a.env.Stdout, text)
	return err
}

// waitPolicy polls until the ledger holds version v: with hash, it is
// the one applied; with another, an apply made at the same time took v
// first.
func (a *app) waitPolicy(ctx context.Context, v int64, hash, id string) (*api.PolicyVersion, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(a.timeout)
	tick := time.NewTicker(a.poll)
	defer tick.Stop()
	for {
		got, err := policyShow(ctx, c, v)
		switch {
		case err == nil && got.Hash == hash:
			return got, nil
		case err == nil:
			return nil, api.WithHint(fmt.Errorf("policy version %d was taken by another apply made at the same time (%s, by %s at %s, hash %s): yours (event %s) was recorded and ignored, and changed nothing",
				v, dash(got.Name), got.Signer, fmtTime(got.Time), got.Hash, id),
				"look at the policy in force with agentctl policy show, then apply again (a ledger node that had not caught up can also have given an old version in force)")
		case !errors.Is(err, api.ErrNotFound) && !errors.Is(err, api.ErrTimeout):
			return nil, fmt.Errorf("policy.applied published (event %s), but: %w", id, err)
		}
		if time.Now().After(deadline) {
			return nil, &exitError{code: ExitUnconfirmed, err: api.WithHint(
				fmt.Errorf("policy.applied published and accepted (event %s), but no ledger node shows version %d after %s", id, v, a.timeout),
				"check with agentctl policy history; a ledger node shows it once it has folded the event")}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func (a *app) policyHistoryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history",
		Short: "List the versions of the policy the ledger holds, newest first",
		Long: `List every version of the policy the ledger holds, newest first: its
number, hash, name, how it came (apply: an administrator's policy apply;
bootstrap: a leader recorded agentd's --policy file or the shipped default
while the ledger held none; remember: an approval given with --remember
added a narrow allow rule), who applied it, when, and why. The first line
is the policy in force. 'agentctl policy show --version N' prints one.

-o json prints an array of version objects (without their text), -o jsonl
one per line.`,
		Example: `  agentctl policy history
  agentctl policy history -o jsonl | jq -r 'select(.source=="remember") | .run'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var vs []api.PolicyVersion
			for v, err := range api.Walk(cmd.Context(), "", func(ctx context.Context, cursor string) (*api.Page[api.PolicyVersion], error) {
				var p api.Page[api.PolicyVersion]
				return &p, c.Call(ctx, api.MethodPolicyList, api.PolicyListRequest{Cursor: cursor}, &p)
			}) {
				if err != nil {
					return err
				}
				vs = append(vs, v)
			}
			if a.output != formatText {
				return writeList(a, vs)
			}
			if len(vs) == 0 {
				fmt.Fprintln(a.env.Stdout, "the ledger holds no policy (agentd records the default policy when its leader starts; or agentctl policy apply)")
				return nil
			}
			t := a.table()
			fmt.Fprintln(t, "VERSION\tHASH\tNAME\tSOURCE\tBY\tTIME\tREASON")
			for _, v := range vs {
				src := v.Source
				if v.Source == event.PolicyFromRemember && v.Run != "" {
					src += " (" + truncate(v.Run, 8) + " " + v.Step + ")"
				}
				fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Version, truncate(v.Hash, 19), dash(v.Name), src, v.Signer, fmtTime(v.Time), dash(oneLine(v.Reason)))
			}
			return t.Flush()
		},
	}
}
