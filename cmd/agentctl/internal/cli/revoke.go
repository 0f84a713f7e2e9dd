package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"
)

// revokeResult is what node revoke and operator revoke print with -o json.
type revokeResult struct {
	Kind   string    `json:"kind"`
	ID     string    `json:"id"`
	Before time.Time `json:"before"`
	// NATSUsers are the NATS user keys of the identity this revocation
	// names: those the ledger saw its credentials name, and those of
	// --nats-user and --credential.
	NATSUsers []string `json:"nats_users"`
	// Pushed says whether the NATS servers were given the account with
	// the revocation (needs --root); AccountRevoked is how many users
	// that account revokes in all (every revocation the ledger holds).
	Pushed         bool `json:"pushed"`
	AccountRevoked int  `json:"account_revoked,omitempty"`
}

// revokeFlags are the flags of both revoke commands.
type revokeFlags struct {
	reason, root string
	natsUsers    []string
	credentials  []string
}

func (f *revokeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.reason, "reason", "", "why (recorded in the ledger; required)")
	fl.StringVar(&f.root, "root", "", "the cluster root (a directory holding root.key, or the root.key file): push the revocation to the NATS servers too")
	fl.StringSliceVar(&f.natsUsers, "nats-user", nil, "a NATS user key (U…) to revoke besides those the ledger saw the identity's credentials name")
	fl.StringSliceVar(&f.credentials, "credential", nil, "a file holding a credential of NAME whose NATS user to revoke too — its creds file, node.cred, node.nats.jwt or an API token it made: how to revoke credentials that never signed an event")
}

func (a *app) nodeRevokeCmd() *cobra.Command {
	var f revokeFlags
	cmd := &cobra.Command{
		Use:   "revoke NAME --reason TEXT [--root DIR]",
		Short: "Revoke a node's credentials: the ledger and NATS refuse it from now on",
		Long: `Revoke every credential of node NAME issued up to now. A credential.revoked
event, signed with your credentials (role admin), is recorded in the ledger:
from its stream position on every ledger node refuses what those
credentials sign (earlier events stay valid). With --root (where root.key
is), the NATS servers are also given the cluster's account with NAME's
NATS users revoked: they close its connections and refuse new ones. The
NATS users are those the ledger saw NAME's credentials name, and any given
with --nats-user or named by a file given with --credential (node.cred or
node.nats.jwt of its data dir): credentials that never signed an event are
unknown to the ledger. When no NATS user of NAME is known, the revocation
is still recorded, and agentctl exits with an error saying what to pass.
Without --root, run 'agentctl keys push-revocations --root DIR' where the
root is.

A node enrolled again afterwards (agentctl node enroll --force) gets a new
credential, issued after the revocation: it is accepted.`,
		Example: `  agentctl node revoke exec-b --reason 'disk stolen' --root ./cluster-root
  agentctl node revoke exec-b --reason 'decommissioned'   # ledger only; push later`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.revoke(cmd.Context(), trust.KindNode, argv[0], f)
		},
	}
	f.add(cmd)
	return cmd
}

func (a *app) operatorCmd() *cobra.Command {
	var f revokeFlags
	revoke := &cobra.Command{
		Use:   "revoke NAME --reason TEXT [--root DIR]",
		Short: "Revoke an operator's credentials: the ledger and NATS refuse them from now on",
		Long: `Revoke every operator credential of NAME issued up to now, as 'agentctl
node revoke' does for a node: recorded in the ledger (role admin), refused
from that stream position on — events it signs, and its API tokens on
every HTTP request — and with --root pushed to the NATS servers, which
close the operator's connections. The ledger knows the NATS users only of
credentials it saw sign an event: for an operator who only read (queries,
the audit), give their creds file, an API token they made (--credential)
or their NATS user key (--nats-user). When no NATS user of NAME is known,
the revocation is still recorded, and agentctl exits with an error saying
what to pass.`,
		Example: `  agentctl operator revoke alice --reason 'left the team' --root ./cluster-root
  agentctl operator revoke bob --reason 'laptop stolen' --root ./cluster-root --credential bob.creds`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.revoke(cmd.Context(), trust.KindOperator, argv[0], f)
		},
	}
	f.add(revoke)
	return group("operator", "Revoke operator credentials",
		`Operator credentials are issued with 'agentctl keys operator'; revoke one here.`, revoke)
}

func (a *app) keysPushCmd() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "push-revocations --root DIR",
		Short: "Give the NATS servers every revocation the ledger holds",
		Long: `Read every credential revocation from the ledger (revocations.list), make
the cluster's NATS account with all their NATS users revoked (signed with
keys derived from root.key) and push it to the servers, which close the
revoked users' connections and refuse new ones. Run it after a revocation
made without --root, or after adding a NATS server.`,
		Example: `  agentctl keys push-revocations --root ./cluster-root`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if root == "" {
				return usagef("keys push-revocations: --root is required")
			}
			users, err := a.pushRevocations(cmd.Context(), root, nil)
			if err != nil {
				return err
			}
			if len(users) == 0 {
				fmt.Fprintf(a.env.Stdout, "pushed the account with 0 revoked NATS users\n")
				return nil
			}
			fmt.Fprintf(a.env.Stdout, "pushed the account with %d revoked NATS users: %s\n", len(users), strings.Join(users, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "the cluster root: a directory holding root.key, or the root.key file")
	return cmd
}

// revoke records the revocation of kind/id in the ledger and, with
// f.root, pushes it to the NATS servers.
func (a *app) revoke(ctx context.Context, kind, id string, f revokeFlags) error {
	if err := trust.CheckID(id); err != nil {
		return &usageError{fmt.Errorf("revoke: NAME: %w", err)}
	}
	if strings.TrimSpace(f.reason) == "" {
		return usagef("revoke: --reason is required (it is recorded in the ledger)")
	}
	for _, u := range f.natsUsers {
		if !nkeys.IsValidPublicUserKey(u) {
			return usagef("revoke: --nats-user %q is not a NATS user key (U…)", u)
		}
	}
	given := slices.Clone(f.natsUsers)
	for _, path := range f.credentials {
		us, err := natsauth.UsersOf(path, kind, id)
		if err != nil {
			return &usageError{fmt.Errorf("revoke %s: --credential: %w (nothing was revoked)", id, err)}
		}
		given = append(given, us...)
	}
	id2, _, err := a.identity()
	if err != nil {
		return err
	}
	if !slices.Contains(id2.Roles, trust.AdminRole) {
		return api.WithHint(fmt.Errorf("revoke %s: credentials %s (%s, roles %v) are not an administrator's: revoking needs role admin (nothing was revoked)", id, a.credsPath(), id2.ID, id2.Roles),
			"the operator.creds next to root.key is an administrator's; or issue one: agentctl keys operator NAME --role admin --root DIR --out FILE")
	}
	// Load the root before anything is published: a wrong --root must
	// not leave a revocation the servers never hear of.
	var root *trust.Root
	if f.root != "" {
		var err error
		if root, err = trust.LoadIssuer(f.root); err != nil {
			return fmt.Errorf("revoke %s: %w", id, err)
		}
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	var seen []api.CredentialSeen
	if err := c.Call(ctx, api.MethodCredentialsList, api.CredentialsRequest{Kind: kind, ID: id}, &seen); err != nil {
		return fmt.Errorf("revoke %s: ask the ledger for its credentials (nothing was revoked): %w", id, err)
	}
	users := given
	for _, s := range seen {
		if s.NATSUser != "" {
			users = append(users, s.NATSUser)
		}
	}
	slices.Sort(users)
	users = slices.Compact(users)
	data := event.CredentialRevokedData{Kind: kind, ID: id, Before: time.Now().UTC().Truncate(time.Second), NATSUsers: users, Reason: f.reason}
	d, err := event.NewDraft(event.CredentialRevoked, "", data)
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("revoke %s: %w", id, err)
	}
	res := revokeResult{Kind: kind, ID: id, Before: data.Before, NATSUsers: users}
	if root != nil && len(users) > 0 {
		all, err := a.pushRevocations(ctx, f.root, &data)
		if err != nil {
			return fmt.Errorf("revoke %s: recorded in the ledger, but: %w", id, err)
		}
		res.Pushed, res.AccountRevoked = true, len(all)
	}
	if a.output != formatText {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		w := a.env.Stdout
		fmt.Fprintf(w, "revoked %s %s: credentials issued up to %s are refused by every ledger node from now on (events and API tokens)\n", kind, id, data.Before.Format(time.RFC3339))
		switch {
		case res.Pushed:
			fmt.Fprintf(w, "NATS refuses %d user(s) of it and closed their connections: %s (pushed the account with %d revoked NATS users in all)\n",
				len(users), strings.Join(users, ", "), res.AccountRevoked)
		case len(users) > 0:
			fmt.Fprintf(w, "NATS still accepts its user(s) %s: run agentctl keys push-revocations --root DIR where root.key is\n", strings.Join(users, ", "))
		}
	}
	if len(users) > 0 {
		return nil
	}
	// Said loudly: NATS still lets the identity in (reads, queries)
	// although the ledger refuses what it signs. With --root NATS was
	// asked to refuse it, and could not be: an error.
	what := fmt.Errorf("revoke %s %s: recorded in the ledger, but NATS still accepts it: the ledger saw no credential of it sign an event, so no NATS user of it is known and none was revoked", kind, id)
	hint := fmt.Sprintf("run again with the NATS user: agentctl %s revoke %s --reason TEXT --root DIR --credential FILE (its creds file, node.cred, node.nats.jwt or an API token it made) or --nats-user U…", kind, id)
	if root != nil {
		return api.WithHint(what, hint)
	}
	fmt.Fprintf(a.env.Stderr, "warning: %v\n  %s\n", what, hint)
	return nil
}

// pushRevocations makes the cluster's NATS account with the NATS users of
// every revocation the ledger holds (and extra, one being recorded)
// revoked, and pushes it to the servers over a short-lived system user.
// It returns the users the pushed account revokes, sorted.
func (a *app) pushRevocations(ctx context.Context, rootPath string, extra *event.CredentialRevokedData) ([]string, error) {
	root, err := trust.LoadIssuer(rootPath)
	if err != nil {
		return nil, err
	}
	auth, err := natsauth.NewAuthority(root)
	if err != nil {
		return nil, err
	}
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	var revs []api.Revocation
	if err := c.Call(ctx, api.MethodRevocationsList, struct{}{}, &revs); err != nil {
		return nil, fmt.Errorf("read the revocations from the ledger: %w", err)
	}
	revoked := map[string]time.Time{}
	add := func(r event.CredentialRevokedData) {
		for _, u := range r.NATSUsers {
			if at, ok := revoked[u]; !ok || r.Before.After(at) {
				revoked[u] = r.Before
			}
		}
	}
	for _, r := range revs {
		add(r.CredentialRevokedData)
	}
	if extra != nil {
		add(*extra)
	}
	accountJWT, err := auth.AccountJWT(revoked)
	if err != nil {
		return nil, err
	}
	sysJWT, seed, err := auth.SystemUserCreds(time.Minute)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(a.server, nats.Name("agentctl revocations"), nats.Timeout(a.timeout), nats.MaxReconnects(0),
		nats.UserJWTAndSeed(sysJWT, string(seed)))
	if err != nil {
		return nil, api.WithHint(fmt.Errorf("connect to NATS at %s as the cluster's system user: %w", a.server, err),
			"--root must be the root of the cluster the servers trust")
	}
	defer nc.Close()
	pctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := natsauth.PushAccount(pctx, nc, accountJWT); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(revoked)), nil
}
