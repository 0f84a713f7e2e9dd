package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
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
