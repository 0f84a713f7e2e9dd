package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

// revocationsServer starts an API server of a node named id (a role that
// answers the cluster's queries) answering revocations.list with answer.
func (h *harness) revocationsServer(t *testing.T, id string, answer func() ([]api.Revocation, error)) {
	t.Helper()
	srv := api.NewServer(h.conn.NC, id, nil)
	srv.Sign(h.signer(t, id, event.RoleOrchestrator))
	api.HandleTyped(srv, api.MethodRevocationsList, func(context.Context, struct{}) ([]api.Revocation, error) { return answer() })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
}

// TestRevocationCheckFailsClosed: when the ledger's revocations cannot be
// read, agentctl takes no answer — a revoked node cannot clear itself by
// failing the question. The question is answered with an error, or by a
// node that the revocations it gives revoke, or not at all: each time
// `run list` fails saying the check could not be made. With nobody in the
// query group to ask (no ledger node up) there is no revocation to hold
// against anyone, and answers are taken (every other harness test).
func TestRevocationCheckFailsClosed(t *testing.T) {
	const want = "cannot be checked against the ledger's revocations"
	cases := map[string]func(t *testing.T, h *harness){
		"an error answer": func(t *testing.T, h *harness) {
			h.revocationsServer(t, "ledger-b", func() ([]api.Revocation, error) {
				return nil, errors.New("the ledger is busy")
			})
		},
		"a revoked node answers": func(t *testing.T, h *harness) {
			h.revocationsServer(t, "ledger-b", func() ([]api.Revocation, error) {
				return []api.Revocation{{CredentialRevokedData: event.CredentialRevokedData{Kind: "node", ID: "ledger-b",
					Before: time.Now().Add(time.Hour), Reason: "compromised"}}}, nil
			})
		},
		"no answer": func(t *testing.T, h *harness) {
			sub, err := h.conn.NC.QueueSubscribe(api.SubjectPrefix+api.MethodRevocationsList, api.QueueGroup, func(*nats.Msg) {})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sub.Unsubscribe() })
			if err := h.conn.NC.Flush(); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t).withNode()
			if r := h.run("run", "list"); r.code != ExitOK {
				t.Fatalf("run list before = %+v", r)
			}
			setup(t, h)
			r := h.run("--timeout", "1s", "run", "list")
			if r.code == ExitOK || !strings.Contains(r.stderr, want) {
				t.Fatalf("run list with the revocations unreadable = %+v, want an error saying %q", r, want)
			}
		})
	}
}

// TestRevocationsAskedAgainAfterTheirConnectionClosed: revocations asked
// on a connection that closed before the answer (the connection made
// ahead, dropped while a plan was read) say nothing of the revocations:
// the check asks again on the invocation's own connection and judges by
// that answer — a revoked signer refused, another cleared — instead of
// refusing every answer for a question that never reached the cluster.
func TestRevocationsAskedAgainAfterTheirConnectionClosed(t *testing.T) {
	h := newHarness(t).withNode()
	h.revocationsServer(t, "ledger-b", func() ([]api.Revocation, error) {
		return []api.Revocation{{CredentialRevokedData: event.CredentialRevokedData{Kind: trust.KindNode, ID: "ledger-x",
			Before: time.Now().Add(time.Hour), Reason: "compromised"}}}, nil
	})
	cred := func(id string) *trust.Credential {
		c, err := trust.ReadCredential(h.signer(t, id)().Credential)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := newApp(Env{Getenv: func(string) string { return "" }})
	a.server, a.creds, a.timeout, a.ctx = h.url, h.creds, 2*time.Second, context.Background()
	defer a.close()
	if tr, err := a.answerTrust(); tr == nil || err != nil {
		t.Fatalf("answerTrust = %v, %v", tr, err)
	}
	gone, err := a.dial(a.timeout)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	a.prefetchRevocationsOn(gone)

	if err := a.revokedSigner(cred("ledger-x")); err == nil || !strings.Contains(err.Error(), "revoked") || strings.Contains(err.Error(), "cannot be checked") {
		t.Fatalf("a revoked signer after the first question's connection closed: %v, want refused as revoked", err)
	}
	if err := a.revokedSigner(cred("ledger-a")); err != nil {
		t.Fatalf("a signer the revocations clear: %v", err)
	}
}
