package node_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestDashboardSessionEndsWhenRevoked: a browser signed in to the
// dashboard with an operator's token keeps its session until the
// operator's credential is revoked; the next request is refused (403,
// saying so) and ends the session, and the one after is a read-only
// browser's.
func TestDashboardSessionEndsWhenRevoked(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(filepath.Join(t.TempDir(), "node")))
	base := "http://" + n.HTTPAddr()
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	op7, err := trust.NewIdentity(root, "op7", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := trust.APIToken(op7, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := newDashClient()
	dashLogin(t, c, base, tok)
	get := func() (int, string) {
		t.Helper()
		resp, err := c.Get(base + "/gates")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "op7") {
		t.Fatalf("signed in: %d, op7 not shown", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
		Kind: trust.KindOperator, ID: "op7", Before: time.Now().UTC().Truncate(time.Second), Reason: "left the team"})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	// The ledger applies the revocation to the token check when it has
	// appended it: until then the session holds, and the first request
	// it refuses must be a 403.
	var code int
	var body string
	poll.Eventually(t, 30*time.Second, "a request refused after op7's revocation", func() bool {
		code, body = get()
		return code != http.StatusOK || !strings.Contains(body, "op7")
	})
	if code != http.StatusForbidden || !strings.Contains(body, "revoked") {
		t.Fatalf("the request after the revocation: %d, want 403 saying the credential is revoked: %.600s", code, body)
	}
	if code, body := get(); code != http.StatusOK || strings.Contains(body, "op7") || !strings.Contains(body, "sign in") {
		t.Fatalf("the request after that: %d, want a read-only page: %.600s", code, body)
	}
}
