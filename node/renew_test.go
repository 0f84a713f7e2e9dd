package node_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestCredentialRenewedDuringARun: a node whose credential (and NATS user)
// lives 9 s runs a plan that takes longer than that. Where root.key is,
// the node renews both before they expire, signs with the new credential
// from then on, and reconnects to NATS with the new user when the server
// closes the old one's connection: the run succeeds, nothing is refused,
// and the ledger holds events signed by more than one credential.
func TestCredentialRenewedDuringARun(t *testing.T) {
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	cfg := nodetest.Config(dir)
	if _, err := natsauth.Enroll(dir, root, cfg.Name, cfg.Roles, 9*time.Second, true); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, cfg)
	run := n.Submit(t, "chains.yaml", chainsPlan(2, 20, "sleep 0.5"))
	r := n.WaitRun(t, run, 2*time.Minute)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run: %s (%s)", r.Status, r.Reason)
	}
	creds := map[string]bool{}
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.Rejected) {
			t.Errorf("the ledger refused a message: %s", l.Data)
		}
		if l.Node == cfg.Name && l.JWS != "" {
			creds[credOf(t, l.JWS)] = true
		}
	}
	if len(creds) < 2 {
		t.Errorf("the node's events were signed by %d credential(s), want the renewed ones too", len(creds))
	}
}

// credOf is the credential a JWS's protected header carries.
func credOf(t *testing.T, jws string) string {
	t.Helper()
	h, _, _ := strings.Cut(jws, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	var hdr struct {
		Cred string `json:"cred"`
	}
	if err := json.Unmarshal(b, &hdr); err != nil {
		t.Fatal(err)
	}
	return hdr.Cred
}

// TestCredentialCheckWarnsBeforeExpiry: a node without root.key cannot
// renew its credential by itself; as the credential nears its expiry the
// credential check fails (not blocking) and says how to renew it.
func TestCredentialCheckWarnsBeforeExpiry(t *testing.T) {
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	cfg := nodetest.Config(dir)
	if _, err := natsauth.Enroll(dir, root, cfg.Name, cfg.Roles, 8*time.Second, true); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, trust.RootKeyFile)); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, cfg)
	var reason string
	poll.Eventually(t, 10*time.Second, "the credential check failing", func() bool {
		for _, c := range n.Checks() {
			if c.Name == health.CheckCredential && !c.OK {
				reason = c.Reason
				return true
			}
		}
		return false
	})
	if !strings.Contains(reason, "the node's credential expires in") || !strings.Contains(reason, "agentctl node renew "+cfg.Name) {
		t.Errorf("credential check: %q", reason)
	}
}
