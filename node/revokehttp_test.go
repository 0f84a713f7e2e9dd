package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gatedRunWith is gatedRun on a node whose configuration tweak changes.
func gatedRunWith(t *testing.T, tweak func(*config.Config)) (n *nodetest.Node, run, marker string) {
	t.Helper()
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("name: gatekeeper\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(dir, "marker")
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Policy = policyFile
	tweak(&cfg)
	n = nodetest.Start(t, cfg)
	run = submitGoal(t, n, "wipe", "goal: wipe\nsteps:\n  - id: wipe\n    run: \"echo ran >> "+marker+" && rm -rf ./build\"\n")
	return n, run, marker
}

// postAuth posts body as JSON to url with an optional bearer token and
// returns the status and body.
func postAuth(t *testing.T, url, token string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// revokedOperator issues operators op5 and op6 of n's root, has n's
// administrator revoke op5 in the ledger (credential.revoked, as agentctl
// operator revoke records it), waits until the ledger holds it and
// returns tokens minted after it: op5's and op6's.
func revokedOperator(t *testing.T, n *nodetest.Node) (revoked, other string) {
	t.Helper()
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	op5, err := trust.NewIdentity(root, "op5", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	op6, err := trust.NewIdentity(root, "op6", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
		Kind: trust.KindOperator, ID: "op5", Before: time.Now().UTC().Truncate(time.Second), Reason: "left the team"})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "op5's revocation in the ledger", func() bool {
		revs, err := n.API.Revocations(ctx)
		return err == nil && len(revs) == 1
	})
	mint := func(id *trust.Identity) string {
		tok, err := trust.APIToken(id, trust.DefaultAPITokenTTL, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	return mint(op5), mint(op6)
}

// noAnswer fails t when the run's audit holds a gate answer or the gated
// step ran.
func noAnswer(t *testing.T, n *nodetest.Node, run, marker string) {
	t.Helper()
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.GateDecidedFor) || l.Type == string(event.GateDecided) {
			t.Errorf("the ledger holds an answer: %s %s", l.Type, l.Data)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the gated step ran (%v)", err)
	}
}

// TestRevokedOperatorRefusedOverHTTP: on a node whose HTTP API asks for a
// token, a token a revoked operator mints after the revocation is refused
// on every request — 403 saying the credential is revoked, on GET
// /api/runs and on POST /api/gates, which records nothing — while an
// operator who is not revoked is served.
func TestRevokedOperatorRefusedOverHTTP(t *testing.T) {
	n, run, marker := gatedRunWith(t, func(c *config.Config) {
		c.HTTPListen, c.ProbeListen = "0.0.0.0:0", "127.0.0.1:0"
	})
	if !n.HTTPAuth() {
		t.Fatal("the node's HTTP API asks for no token")
	}
	base := loopbackURL(t, n.HTTPAddr())
	revoked, other := revokedOperator(t, n)
	poll.Eventually(t, 30*time.Second, "the gate listed", func() bool {
		gates, err := n.API.GatesAll(context.Background(), api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})
	gates, err := n.API.GatesAll(context.Background(), api.GatesRequest{Run: run})
	if err != nil || len(gates) != 1 {
		t.Fatalf("gates %+v %v", gates, err)
	}
	accept := map[string]any{"run": run, "step": "wipe", "subject": gates[0].Subject, "action": "accept"}

	if code, body := getAuth(t, base+"/api/runs", revoked); code != http.StatusForbidden || !strings.Contains(body, `operator "op5"`) || !strings.Contains(body, "revoked") {
		t.Errorf("GET /api/runs with the revoked operator's token: %d %q, want 403 saying op5's credential is revoked", code, body)
	}
	if code, body := postAuth(t, base+"/api/gates", revoked, accept); code != http.StatusForbidden || !strings.Contains(body, "revoked") {
		t.Errorf("POST /api/gates with the revoked operator's token: %d %q, want 403", code, body)
	}
	if code, body := getAuth(t, base+"/api/runs", other); code != http.StatusOK || !strings.Contains(body, `"items"`) {
		t.Errorf("GET /api/runs with op6's token: %d %q, want 200", code, body)
	}
	settle(t, n)
	noAnswer(t, n, run, marker)
}

// TestRevokedOperatorCannotAnswerGateOnLoopback: where the HTTP API asks
// for no token (loopback), the ui's gate answer checks the operator's
// token itself, revocation included: the revoked operator's is refused
// (403) and nothing is recorded; another operator's is accepted.
func TestRevokedOperatorCannotAnswerGateOnLoopback(t *testing.T) {
	n, run, marker := gatedRunWith(t, func(*config.Config) {})
	base := "http://" + n.HTTPAddr() + "/api/gates"
	revoked, other := revokedOperator(t, n)
	var gates []api.Gate
	poll.Eventually(t, 30*time.Second, "the gate listed", func() bool {
		var err error
		gates, err = n.API.GatesAll(context.Background(), api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})
	accept := map[string]any{"run": run, "step": "wipe", "subject": gates[0].Subject, "action": "accept"}
	if code, body := postAuth(t, base, revoked, accept); code != http.StatusForbidden || !strings.Contains(body, `operator \"op5\"`) || !strings.Contains(body, "revoked") {
		t.Errorf("the revoked operator's answer: %d %q, want 403 saying op5's credential is revoked", code, body)
	}
	settle(t, n)
	noAnswer(t, n, run, marker)
	if code, body := postAuth(t, base, other, accept); code != http.StatusAccepted || !strings.Contains(body, "op6") {
		t.Fatalf("op6's answer: %d %q, want 202", code, body)
	}
	waitFinished(t, n, []string{run})
}

// settle waits until the leader has acted on everything recorded so far:
// it submits a one-step run and waits for it to finish, which the leader
// decides only after folding what came before it in the stream. A test
// that asserts something did not happen (no answer, no assignment)
// asserts it after this, not after a sleep.
func settle(t *testing.T, n *nodetest.Node) {
	t.Helper()
	run := submitGoal(t, n, "settle", "goal: settle\nsteps:\n  - id: noop\n    kind: noop\n")
	waitFinished(t, n, []string{run})
}
