package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	ledgerhistory "github.com/agentic-dev/agentic/ledger/history"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// Root rotation (docs/security.md, "Root rotation"): rotate-root makes the
// new root and has the ledger trust it beside the old one (the overlap);
// retire-root ends the trust in the old one (the cutover).

// rotateResult is what keys rotate-root prints with -o json.
type rotateResult struct {
	Root    string `json:"root"`
	From    string `json:"from"`
	Genesis string `json:"genesis"`
	Dir     string `json:"dir"`
	Pushed  bool   `json:"pushed"`
}

// retireResult is what keys retire-root prints with -o json.
type retireResult struct {
	Retired string `json:"retired"`
	Pushed  bool   `json:"pushed"`
}

func (a *app) keysRotateRootCmd() *cobra.Command {
	var oldPath, newDir, reason string
	cmd := &cobra.Command{
		Use:   "rotate-root --root OLD_DIR --new NEW_DIR --reason TEXT",
		Short: "Make a new root and have the cluster trust it beside the old one",
		Long: `Start a root rotation (docs/security.md, "Root rotation"). Makes a new root
in NEW_DIR (created 0700; it must hold no root): root.key and root.pub of
the new root, roots.pub (the cluster's genesis root and the roots it
succeeds), inherited.keys (the NATS operator and account keys, which stay
the cluster's: keep it secret with root.key) and operator.creds (an
administrator of the new root). Then publishes trust.root_added, signed
with --creds (an administrator's credential of a root the cluster trusts
now), and waits for a ledger node to accept it: from there on every ledger
node accepts credentials of both roots. OLD_DIR's roots.pub then lists the
new root too, and the NATS account is pushed with the signing keys of both
roots, so users of either connect.

Then re-enrol every node and operator with the new root — executor-only
nodes first, as they trust the roots their data dir lists:
  agentctl node enroll NAME --roles ROLES --root NEW_DIR --out DATA --force
  agentctl keys operator NAME --root NEW_DIR --out FILE --force
and, once nothing uses the old root's credentials any more:
  agentctl --creds NEW_DIR/operator.creds keys retire-root OLD_KEYID --root NEW_DIR --reason TEXT`,
		Example: `  agentctl --creds ./root-2025/operator.creds keys rotate-root --root ./root-2025 --new ./root-2026 --reason 'yearly rotation'`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if oldPath == "" || newDir == "" {
				return usagef("keys rotate-root: --root and --new are required")
			}
			if strings.TrimSpace(reason) == "" {
				return usagef("keys rotate-root: --reason is required (it is recorded in the ledger)")
			}
			return a.rotateRoot(cmd.Context(), oldPath, newDir, reason)
		},
	}
	f := cmd.Flags()
	f.StringVar(&oldPath, "root", "", "the root in use: a directory holding root.key")
	f.StringVar(&newDir, "new", "", "directory for the new root (must hold none)")
	f.StringVar(&reason, "reason", "", "why (recorded in the ledger)")
	return cmd
}

func (a *app) keysRetireRootCmd() *cobra.Command {
	var rootPath, reason string
	cmd := &cobra.Command{
		Use:   "retire-root KEYID --root DIR --reason TEXT",
		Short: "End the cluster's trust in a root (the cutover of a rotation)",
		Long: `Publish trust.root_retired for the root KEYID, signed with --creds (an
administrator's credential of a root the cluster goes on trusting), and
wait for a ledger node to accept it: from there on every ledger node
refuses what the root's credentials sign (code root_retired), while what
they signed before stays in the ledger and verifies. The ledger refuses to
retire its last trusted root. Then DIR (the root that stays, holding
root.key) no longer trusts KEYID, and the NATS account is pushed without
KEYID's signing key: the servers close the connections of the users it
signed and refuse new ones. Without --root (a lost root: no directory
holds the NATS keys) only the event is published.`,
		Example: `  agentctl --creds ./root-2026/operator.creds keys retire-root 4f1c9a2e7b3e0d51 --root ./root-2026 --reason 'rotation: cutover'`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("keys retire-root: --reason is required (it is recorded in the ledger)")
			}
			return a.retireRoot(cmd.Context(), argv[0], rootPath, reason)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rootPath, "root", "", "the root that stays: a directory holding root.key (without it, NATS is not told)")
	f.StringVar(&reason, "reason", "", "why (recorded in the ledger)")
	return cmd
}

func (a *app) keysAddRootCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "add-root DIR --reason TEXT",
		Short: "Have the cluster trust the root in DIR (when the old root key is lost)",
		Long: `Publish trust.root_added for the root in DIR (its root.key signs the proof
that it agrees to be a root of this cluster), signed with
--creds (an administrator's credential of a root the cluster trusts now),
and wait for a ledger node to accept it. The ledger side of a rotation
when the old root.key is lost (docs/security.md, "Losing the root"): a
root made by 'agentctl keys init' does not hold the cluster's NATS keys,
so NATS is not told — use 'keys rotate-root' while the old root.key
exists.`,
		Example: `  agentctl --creds surviving-admin.creds keys add-root ./new-root --reason 'root key lost'`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("keys add-root: --reason is required (it is recorded in the ledger)")
			}
			if err := a.adminIdentity("keys add-root"); err != nil {
				return err
			}
			// The cluster is named by the genesis root its creds file
			// carries (and the cluster's nodes answer: checked before the
			// event is published).
			_, cluster, err := a.identity()
			if err != nil {
				return err
			}
			root, err := trust.LoadIssuer(argv[0])
			if err != nil {
				return &usageError{fmt.Errorf("keys add-root: %w", err)}
			}
			proof, err := root.RootProof(cluster.GenesisID())
			if err != nil {
				return fmt.Errorf("keys add-root: %w", err)
			}
			d, err := event.NewDraft(event.RootAdded, "", event.RootAddedData{Key: hex.EncodeToString(root.Public), KeyID: root.KeyID(), Reason: reason, Proof: proof})
			if err != nil {
				return err
			}
			if err := a.publish(cmd.Context(), d); err != nil {
				return fmt.Errorf("keys add-root %s: %w", root.KeyID(), err)
			}
			if a.output != formatText {
				return a.writeJSON(rotateResult{Root: root.KeyID(), Dir: argv[0]})
			}
			fmt.Fprintf(a.env.Stdout, "the cluster's ledger trusts root %s from now on; NATS was not told\n", root.KeyID())
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the ledger)")
	return cmd
}

// adminIdentity refuses creds that are not an administrator's, before
// anything is written or published.
func (a *app) adminIdentity(what string) error {
	id, _, err := a.identity()
	if err != nil {
		return err
	}
	if !slices.Contains(id.Roles, trust.AdminRole) {
		return api.WithHint(fmt.Errorf("%s: credentials %s (%s, roles %v) are not an administrator's: it needs role admin (nothing was done)", what, a.credsPath(), id.ID, id.Roles),
			"the operator.creds next to root.key is an administrator's")
	}
	return nil
}

// loadRootDir loads the issuing root of a directory (root.key there).
func loadRootDir(path string) (*trust.Root, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: a rotation keeps the roots a root trusts in its directory (roots.pub)", path)
	}
	return trust.LoadIssuer(path)
}

func (a *app) rotateRoot(ctx context.Context, oldPath, newDir, reason string) error {
	if err := a.adminIdentity("keys rotate-root"); err != nil {
		return err
	}
	old, err := loadRootDir(oldPath)
	if err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	for _, f := range []string{trust.RootKeyFile, trust.RootPubFile, trust.OperatorCredsFile} {
		if _, err := os.Lstat(filepath.Join(newDir, f)); err == nil {
			return api.WithHint(fmt.Errorf("keys rotate-root: %w: %s", trust.ErrExists, filepath.Join(newDir, f)), "--new must name a directory without a root")
		}
	}
	next, err := natsauth.RotateRoot(old)
	if err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	// The new root is on disk before the cluster is told of it: its key
	// is never lost to a failure after the event.
	if err := os.MkdirAll(newDir, 0o700); err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	if err := trust.SaveRoot(newDir, next); err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	admin, err := trust.NewIdentity(next, trust.DefaultOperator, trust.KindOperator, trust.DefaultOperatorRoles, trust.OperatorCredentialTTL)
	if err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	if err := natsauth.WriteOperatorCreds(filepath.Join(newDir, trust.OperatorCredsFile), next, admin); err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	proof, err := next.RootProof(next.GenesisID())
	if err != nil {
		return fmt.Errorf("keys rotate-root: %w", err)
	}
	d, err := event.NewDraft(event.RootAdded, "", event.RootAddedData{Key: hex.EncodeToString(next.Public), KeyID: next.KeyID(), Reason: reason, Proof: proof})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return api.WithHint(fmt.Errorf("keys rotate-root: the new root %s is in %s, but the cluster does not trust it: %w", next.KeyID(), newDir, err),
			"fix the cause and run the command again with another --new (the new root in "+newDir+" can be deleted)")
	}
	// The old root's holder keeps trusting the new root during the
	// overlap: its NATS account JWTs list both signing keys.
	if err := trust.SaveRoot(oldPath, old.WithTrusted(nil, next.Public)); err != nil {
		return fmt.Errorf("keys rotate-root: the cluster trusts root %s, but: %w", next.KeyID(), err)
	}
	res := rotateResult{Root: next.KeyID(), From: old.KeyID(), Genesis: next.GenesisID(), Dir: newDir}
	if _, err := a.pushRevocations(ctx, newDir, nil); err != nil {
		return api.WithHint(fmt.Errorf("keys rotate-root: the ledger trusts root %s, but the NATS account was not pushed: %w", next.KeyID(), err),
			"users of the new root connect once it is: agentctl keys push-revocations --root "+newDir)
	}
	res.Pushed = true
	if a.output != formatText {
		return a.writeJSON(res)
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "the cluster trusts root %s beside %s from now on (genesis %s)\n", next.KeyID(), old.KeyID(), next.GenesisID())
	fmt.Fprintf(w, "  %s  the new root: keep root.key and inherited.keys offline\n", newDir)
	fmt.Fprintf(w, "  %s  an administrator of the new root\n", filepath.Join(newDir, trust.OperatorCredsFile))
	fmt.Fprintf(w, "the NATS account lists the signing keys of both roots\n")
	fmt.Fprintf(w, "next: re-enrol every node (executor-only ones first) and operator with --root %s, then:\n", newDir)
	fmt.Fprintf(w, "  agentctl --creds %s keys retire-root %s --root %s --reason TEXT\n", filepath.Join(newDir, trust.OperatorCredsFile), old.KeyID(), newDir)
	return nil
}

func (a *app) retireRoot(ctx context.Context, keyID, rootPath, reason string) error {
	if err := a.adminIdentity("keys retire-root"); err != nil {
		return err
	}
	var root *trust.Root
	if rootPath != "" {
		var err error
		if root, err = loadRootDir(rootPath); err != nil {
			return fmt.Errorf("keys retire-root: %w", err)
		}
		if keyID == root.KeyID() {
			return usagef("keys retire-root: %s is the root of %s, the one that stays: pass the root that stays as --root", keyID, rootPath)
		}
		if _, ok := root.RootKey(keyID); !ok {
			return usagef("keys retire-root: %s is not a root %s trusts (it trusts %s)", keyID, rootPath, strings.Join(keyIDs(root.Trusted()), ", "))
		}
	}
	d, err := event.NewDraft(event.RootRetired, "", event.RootRetiredData{KeyID: keyID, Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("keys retire-root %s: %w", keyID, err)
	}
	if root == nil {
		if a.output != formatText {
			return a.writeJSON(retireResult{Retired: keyID})
		}
		fmt.Fprintf(a.env.Stdout, "retired root %s: every ledger node refuses what its credentials sign from now on; NATS was not told (no --root)\n", keyID)
		return nil
	}
	if err := trust.SaveRoot(rootPath, root.WithoutRoot(keyID)); err != nil {
		return fmt.Errorf("keys retire-root %s: the ledger retired it, but: %w", keyID, err)
	}
	res := retireResult{Retired: keyID}
	if _, err := a.pushRevocations(ctx, rootPath, nil); err != nil {
		return api.WithHint(fmt.Errorf("keys retire-root %s: the ledger retired it, but the NATS account was not pushed: %w", keyID, err),
			"NATS still accepts its users until it is: agentctl keys push-revocations --root "+rootPath)
	}
	res.Pushed = true
	if a.output != formatText {
		return a.writeJSON(res)
	}
	fmt.Fprintf(a.env.Stdout, "retired root %s: every ledger node refuses what its credentials sign from now on, and NATS closed its users' connections\n", keyID)
	fmt.Fprintf(a.env.Stdout, "archive the retired root's directory offline: an account pushed from it would list its signing key again; push from %s only\n", rootPath)
	return nil
}

func keyIDs(keys []ed25519.PublicKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = trust.Fingerprint(k)
	}
	return out
}

// verifyExport verifies an exported ledger offline: by default agentd's
// ledger, run as a process (ledgerhistory.Exec), so that agentctl does not link
// Pebble; the package's tests verify in-process.
var verifyExport = ledgerhistory.Exec

func (a *app) keysVerifyHistoryCmd() *cobra.Command {
	var genesis string
	cmd := &cobra.Command{
		Use:   "verify-history FILE --genesis ROOT_PUB",
		Short: "Verify an exported ledger offline with the cluster's genesis root public key",
		Long: `Import FILE (what 'agentctl ledger export' writes) into a temporary ledger
and verify it there, with no node and no secret (agentd's ledger does it:
agentd must be installed next to agentctl, on PATH, or named by
AGENTIC_AGENTD): the hash chain, and every
accepted event's signature judged by the roots the cluster trusted at its
position — the genesis root (ROOT_PUB, its root.pub) and the roots the
ledger's own trust.root_added records added, until their
trust.root_retired. How the history of a cluster whose root was lost or
compromised stays verifiable after the cluster starts again from a new
root (docs/security.md, "Losing the root"). Prints ok, the events, the head
hash and the roots; the exit code is 1 when it does not verify.`,
		Example: `  agentctl keys verify-history ledger-2026-01-02.jsonl --genesis ./old-root/root.pub`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if genesis == "" {
				return usagef("keys verify-history: --genesis is required")
			}
			return a.verifyHistory(cmd.Context(), argv[0], genesis)
		},
	}
	cmd.Flags().StringVar(&genesis, "genesis", "", "the genesis root's public key (root.pub)")
	return cmd
}

func (a *app) verifyHistory(ctx context.Context, file, genesisPath string) error {
	if _, err := trust.LoadRootPublic(genesisPath); err != nil {
		return &usageError{fmt.Errorf("keys verify-history: %w", err)}
	}
	if st, err := os.Stat(file); err != nil {
		return &usageError{fmt.Errorf("keys verify-history: %w", err)}
	} else if st.IsDir() {
		return &usageError{fmt.Errorf("keys verify-history: %s is a directory, not a ledger export", file)}
	}
	res, err := verifyExport(ctx, a.env.Getenv, file, genesisPath)
	if err != nil {
		return fmt.Errorf("keys verify-history: %w", err)
	}
	if res.Roots == nil {
		res.Roots = []ledgerhistory.Root{}
	}
	if a.output != formatText {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		w := a.env.Stdout
		if res.OK {
			fmt.Fprintf(w, "ok: %d events, head %s\n", res.Events, res.Head)
		} else {
			fmt.Fprintf(w, "FAILED: first bad seq %d: %s\n", res.FirstBadSeq, res.Error)
		}
		for _, r := range res.Roots {
			state := "trusted"
			if r.RetiredStream != 0 {
				state = fmt.Sprintf("retired at stream seq %d", r.RetiredStream)
			}
			from := "genesis"
			if !r.Genesis {
				from = fmt.Sprintf("added at stream seq %d", r.AddedStream)
			}
			fmt.Fprintf(w, "  root %s  %s, %s\n", r.KeyID, from, state)
		}
	}
	if !res.OK {
		return &exitError{code: ExitError}
	}
	return nil
}
