package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) nodeCmd() *cobra.Command {
	return group("node", "List, drain, back up and enroll agentd nodes",
		`List the cluster's nodes (ls), drain one (drain) and back one up
(backup), over the bus; revoke one's credentials (revoke).

Issue node credentials from the cluster root (enroll). A node started on a
data directory without root.key cannot issue its own credential: enroll it
here first. Enrolling only reads and writes files; it needs no NATS server.`,
		a.nodeLsCmd(), a.nodeDrainCmd(), a.nodeEnrollCmd(), a.nodeRenewCmd(), a.nodeBackupCmd(), a.nodeRevokeCmd())
}

// enrollResult is what node enroll prints with -o json.
type enrollResult struct {
	Node    string    `json:"node"`
	Roles   []string  `json:"roles"`
	Root    string    `json:"root"`
	Expires time.Time `json:"expires"`
	Dir     string    `json:"dir"`
	Files   []string  `json:"files"`
}

func (a *app) nodeEnrollCmd() *cobra.Command {
	var roles, rootPath, out string
	var ttl time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "enroll NAME --roles ROLES --root DIR_OR_ROOT_KEY --out DATA_DIR",
		Short: "Issue a node credential into a new node's data directory",
		Long: `Issue a credential for node NAME with ROLES (comma-separated, from
orchestrator, planner, executor, memory, ui), signed by the cluster root (a
directory holding root.key, or the root.key file), and write into DATA_DIR
(created 0700 if missing) what agentd loads at start: root.pub, node.key,
node.cred, node.nats.jwt (the node's NATS user, its key derived from
node.key) and nats-bundle.json (the NATS operator and accounts an embedded
nats-server trusts), all 0600. The root's private key is not copied.

Start the node with the same name and roles:
  agentd --data DATA_DIR --name NAME --roles ROLES --nats URL

Refuses a DATA_DIR that already holds a node key or credential unless
--force (the replaced credential stays valid until it expires: revocation
is not implemented), and always refuses one that belongs to another
cluster's root.`,
		Example: `  agentctl node enroll exec-b --roles executor --root ./data --out ./data-exec-b
  agentctl node enroll node-c --roles orchestrator,memory --root ./cluster-root/root.key --out /var/lib/agentic --ttl 720h`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, argv []string) error {
			name := argv[0]
			if err := trust.CheckID(name); err != nil {
				return &usageError{fmt.Errorf("node enroll: NAME: %w", err)}
			}
			rs, err := parseNodeRoles(roles)
			if err != nil {
				return err
			}
			if rootPath == "" || out == "" {
				return usagef("node enroll: --root and --out are required")
			}
			if ttl <= 0 {
				return usagef("node enroll: --ttl must be positive, got %s", ttl)
			}
			return a.nodeEnroll(name, rs, rootPath, out, ttl, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&roles, "roles", "", "the node's roles, comma-separated (as agentd --roles)")
	f.StringVar(&rootPath, "root", "", "the cluster root: a directory holding root.key, or the root.key file")
	f.StringVar(&out, "out", "", "the node's data directory (agentd --data)")
	f.DurationVar(&ttl, "ttl", trust.NodeCredentialTTL, "how long the credential is valid")
	f.BoolVar(&force, "force", false, "replace an existing node key and credential in DATA_DIR")
	return cmd
}

// parseNodeRoles splits a --roles value and checks each role as agentd's
// configuration does.
func parseNodeRoles(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("node enroll: --roles is required, from %s", strings.Join(event.NodeRoles, ","))
	}
	var out []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		switch {
		case !slices.Contains(event.NodeRoles, r):
			return nil, usagef("node enroll: unknown role %q, want some of %s", r, strings.Join(event.NodeRoles, ","))
		case slices.Contains(out, r):
			return nil, usagef("node enroll: role %q listed twice", r)
		}
		out = append(out, r)
	}
	return out, nil
}

func (a *app) nodeEnroll(name string, roles []string, rootPath, out string, ttl time.Duration, force bool) error {
	root, err := trust.LoadIssuer(rootPath)
	if err != nil {
		return fmt.Errorf("node enroll %s: %w", name, err)
	}
	id, err := natsauth.Enroll(out, root, name, roles, ttl, force)
	if errors.Is(err, trust.ErrExists) {
		return api.WithHint(fmt.Errorf("node enroll %s: %w", name, err),
			"this data directory already has a node identity; pass --force to replace it")
	}
	if err != nil {
		return fmt.Errorf("node enroll %s: %w", name, err)
	}
	files := []string{
		filepath.Join(out, trust.RootPubFile),
		filepath.Join(out, trust.NodeKeyFile),
		filepath.Join(out, trust.NodeCredFile),
		filepath.Join(out, natsauth.UserJWTFile),
		filepath.Join(out, natsauth.BundleFile),
	}
	res := enrollResult{Node: name, Roles: roles, Root: root.KeyID(), Expires: expiry(root, id), Dir: out, Files: files}
	if a.output != formatText {
		return a.writeJSON(res)
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "enrolled node %s (roles %s) under root %s, valid until %s\n",
		name, strings.Join(roles, ","), res.Root, res.Expires.Format(time.RFC3339))
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintf(w, "start it with:\n  agentd --data %s --name %s --roles %s --nats nats://HOST:4222\n", out, name, strings.Join(roles, ","))
	return nil
}

func (a *app) nodeRenewCmd() *cobra.Command {
	var rootPath, data string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "renew NAME --root DIR_OR_ROOT_KEY --data DATA_DIR [--ttl 8760h]",
		Short: "Renew a node's credential in its data directory, without a restart",
		Long: `Issue node NAME a new credential for the same key, roles and NATS user,
valid for --ttl from now, and a NATS user JWT for it, into DATA_DIR (the
node's data directory, or a copy of its node.cred to send back): the
private key is not needed, so the root holder renews a node from its
public credential. A running agentd loads the new credential within a
minute, signs with it from then on and reconnects to NATS with the new
user: no restart, nothing refused. A node whose data dir holds root.key
renews itself (a third of its credential's lifetime, or 30 days, before
expiry).`,
		Example: `  agentctl node renew exec-b --root ./cluster-root --data /var/lib/agentic`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, argv []string) error {
			if rootPath == "" || data == "" {
				return usagef("node renew: --root and --data are required")
			}
			if ttl <= 0 {
				return usagef("node renew: --ttl must be positive, got %s", ttl)
			}
			root, err := trust.LoadIssuer(rootPath)
			if err != nil {
				return fmt.Errorf("node renew %s: %w", argv[0], err)
			}
			c, err := natsauth.RenewNode(data, root, ttl)
			if err != nil {
				return fmt.Errorf("node renew %s: %w", argv[0], err)
			}
			if c.ID != argv[0] {
				return fmt.Errorf("node renew %s: %s holds the credential of node %s (renewed anyway: check the directory)", argv[0], data, c.ID)
			}
			if a.output != formatText {
				return a.writeJSON(enrollResult{Node: c.ID, Roles: c.Roles, Root: root.KeyID(), Expires: c.Expires.UTC(), Dir: data,
					Files: []string{filepath.Join(data, trust.NodeCredFile), filepath.Join(data, natsauth.UserJWTFile)}})
			}
			fmt.Fprintf(a.env.Stdout, "renewed node %s (roles %s) until %s in %s: a running agentd takes it within a minute\n",
				c.ID, strings.Join(c.Roles, ","), c.Expires.UTC().Format(time.RFC3339), data)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&rootPath, "root", "", "the cluster root: a directory holding root.key, or the root.key file")
	f.StringVar(&data, "data", "", "the node's data directory (holding its node.cred)")
	f.DurationVar(&ttl, "ttl", trust.NodeCredentialTTL, "how long the renewed credential is valid")
	return cmd
}
