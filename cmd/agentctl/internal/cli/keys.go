package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// The keys commands but push-revocations, and node enroll and renew, work
// offline: they read and write key files and never call a.conn, so no
// NATS server is needed.

func (a *app) keysCmd() *cobra.Command {
	return group("keys", "Manage the cluster's root key and operator credentials",
		`The cluster's chain of trust: one root key signs every node's and operator's
credential, and the NATS operator and accounts are derived from it. These
commands read and write files and need no NATS server, but
push-revocations, which gives the servers the revocations the ledger holds.`,
		a.keysInitCmd(), a.keysOperatorCmd(), a.keysAPITokenCmd(), a.keysNATSConfigCmd(), a.keysPushCmd(), a.keysRotateRootCmd(), a.keysRetireRootCmd(), a.keysAddRootCmd(), a.keysVerifyHistoryCmd())
}

// keysInitResult is what keys init prints with -o json.
type keysInitResult struct {
	Dir   string   `json:"dir"`
	Root  string   `json:"root"`
	Files []string `json:"files"`
}

func (a *app) keysInitCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Create a cluster root key and an operator credential",
		Long: `Create a new cluster root in DIR (created 0700 if missing): root.key (the
root private key, which issues every credential: keep it offline),
root.pub (the public key every node verifies with), operator.creds (an
operator credential for agentctl with roles operator and admin, and its
NATS user) and nats-bundle.json (the NATS operator and accounts derived
from the root, which NATS servers trust), all 0600. Refuses to touch a DIR
that already holds any of them.

'agentd --data DIR' started on that directory uses the root as its own; for
other nodes, issue credentials with 'agentctl node enroll --root DIR'.`,
		Example: `  agentctl keys init --dir ./cluster-root
  agentctl node enroll node-a --roles orchestrator,planner,memory,ui --root ./cluster-root --out ./data-a`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return usagef("keys init: --dir is required")
			}
			return a.keysInit(dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for root.key, root.pub and operator.creds")
	return cmd
}

func (a *app) keysInit(dir string) error {
	root, err := natsauth.InitRoot(dir)
	if errors.Is(err, trust.ErrExists) {
		return api.WithHint(fmt.Errorf("keys init: %w", err),
			"this directory already holds a cluster root; issue node credentials from it with: agentctl node enroll NAME --roles ROLES --root "+dir+" --out DATA")
	}
	if err != nil {
		return fmt.Errorf("keys init %s: %w", dir, err)
	}
	files := []string{
		filepath.Join(dir, trust.RootKeyFile),
		filepath.Join(dir, trust.RootPubFile),
		filepath.Join(dir, trust.OperatorCredsFile),
		filepath.Join(dir, natsauth.BundleFile),
	}
	if a.output != formatText {
		return a.writeJSON(keysInitResult{Dir: dir, Root: root.KeyID(), Files: files})
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "created cluster root %s in %s\n", root.KeyID(), dir)
	fmt.Fprintf(w, "  %-28s root private key: issues every credential, keep it offline\n", files[0])
	fmt.Fprintf(w, "  %-28s root public key: every node verifies with it\n", files[1])
	fmt.Fprintf(w, "  %-28s operator credentials for agentctl (--creds), roles operator and admin: keep it secret\n", files[2])
	fmt.Fprintf(w, "  %-28s the NATS operator and accounts servers trust (public)\n", files[3])
	fmt.Fprintf(w, "next:\n")
	fmt.Fprintf(w, "  agentctl node enroll NAME --roles ROLES --root %s --out DATA\n", dir)
	fmt.Fprintf(w, "  agentd --data DATA --name NAME --roles ROLES [--nats URL]\n")
	fmt.Fprintf(w, "  agentctl --creds %s goal submit ...\n", files[2])
	return nil
}

// keysOperatorResult is what keys operator prints with -o json.
type keysOperatorResult struct {
	Operator string    `json:"operator"`
	Roles    []string  `json:"roles"`
	Root     string    `json:"root"`
	Expires  time.Time `json:"expires"`
	File     string    `json:"file"`
}

func (a *app) keysOperatorCmd() *cobra.Command {
	var rootPath, out, role string
	var ttl time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "operator NAME --root DIR_OR_ROOT_KEY --out FILE [--role viewer|operator|admin]",
		Short: "Issue another operator credential",
		Long: `Issue an operator credential for NAME, signed by the cluster root (a
directory holding root.key, or the root.key file), and write it as a creds
file to FILE (0600) for 'agentctl --creds FILE': its NATS user (JWT and
key, what nats-server checks and the nats CLI's --creds reads), then the
agentic credential, its private key and the root public key. Events an
operator signs carry NAME as their signer. Refuses to overwrite FILE
unless --force.

--role says what NAME may do (docs/security.md has the whole table):
  viewer    read: queries, the audit, step output, the events stream with
            any JetStream consumer; signs nothing the ledger accepts
  operator  what a viewer does, and sign goals, cancels, memory facts,
            drains, step decisions and cluster settings (the default)
  admin     what an operator does, and the JetStream stream API (delete,
            purge, update, restore streams) and node backups`,
		Example: `  agentctl keys operator alice --root ./data --out ~/.agentic/operator.creds
  agentctl keys operator auditor --role viewer --root ./data --out auditor.creds
  agentctl keys operator ci --root ./cluster-root --out ci.creds --ttl 720h`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, argv []string) error {
			if err := trust.CheckID(argv[0]); err != nil {
				return &usageError{fmt.Errorf("keys operator: NAME: %w", err)}
			}
			if rootPath == "" || out == "" {
				return usagef("keys operator: --root and --out are required")
			}
			if ttl <= 0 {
				return usagef("keys operator: --ttl must be positive, got %s", ttl)
			}
			roles, ok := operatorRoles[role]
			if !ok {
				return usagef("keys operator: --role %q: want viewer, operator or admin", role)
			}
			return a.keysOperator(argv[0], roles, rootPath, out, ttl, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rootPath, "root", "", "the cluster root: a directory holding root.key, or the root.key file")
	f.StringVar(&out, "out", "", "creds file to write")
	f.DurationVar(&ttl, "ttl", trust.OperatorCredentialTTL, "how long the credential is valid")
	f.BoolVar(&force, "force", false, "overwrite an existing FILE")
	f.StringVar(&role, "role", trust.OperatorRole, "what the credential may do: viewer, operator or admin")
	return cmd
}

// operatorRoles are the credential roles of each --role of keys operator:
// an admin is an operator too (it signs operator events).
var operatorRoles = map[string][]string{
	trust.ViewerRole:   {trust.ViewerRole},
	trust.OperatorRole: {trust.OperatorRole},
	trust.AdminRole:    {trust.OperatorRole, trust.AdminRole},
}

func (a *app) keysOperator(name string, roles []string, rootPath, out string, ttl time.Duration, force bool) error {
	if _, err := os.Lstat(out); err == nil && !force {
		return api.WithHint(fmt.Errorf("keys operator: %w: %s", trust.ErrExists, out), "pass --force to replace it")
	}
	root, err := trust.LoadIssuer(rootPath)
	if err != nil {
		return fmt.Errorf("keys operator %s: %w", name, err)
	}
	id, err := trust.NewIdentity(root, name, trust.KindOperator, roles, ttl)
	if err != nil {
		return fmt.Errorf("keys operator %s: %w", name, err)
	}
	if dir := filepath.Dir(out); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("keys operator %s: %w", name, err)
		}
	}
	if err := natsauth.WriteOperatorCreds(out, root, id); err != nil {
		return fmt.Errorf("keys operator %s: %w", name, err)
	}
	expires := expiry(root, id)
	if a.output != formatText {
		return a.writeJSON(keysOperatorResult{Operator: name, Roles: roles, Root: root.KeyID(), Expires: expires, File: out})
	}
	fmt.Fprintf(a.env.Stdout, "issued operator %s (roles %s) under root %s, valid until %s\n", name, strings.Join(roles, ","), root.KeyID(), expires.Format(time.RFC3339))
	fmt.Fprintf(a.env.Stdout, "  %s  keep it secret; use it with: agentctl --creds %s ...\n", out, out)
	return nil
}

// expiry is when the credential root just issued to id expires.
func expiry(root *trust.Root, id *trust.Identity) time.Time {
	c, err := root.Verify(id.Credential, time.Now())
	if err != nil {
		return time.Time{} // just issued by root: cannot happen
	}
	return c.Expires.UTC()
}
