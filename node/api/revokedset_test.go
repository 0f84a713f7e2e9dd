package api

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// serveRevocations starts a server of node signing as ident that answers
// revocations.list with answer.
func (k *signedKit) serveRevocations(node string, ident *trust.Identity, answer func() ([]Revocation, error)) {
	k.t.Helper()
	srv := NewServer(connect(k.t, k.url), node, nil)
	srv.Sign(func() *trust.Identity { return ident })
	HandleTyped(srv, MethodRevocationsList, func(context.Context, struct{}) ([]Revocation, error) { return answer() })
	if err := srv.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(srv.Stop)
}

// TestAskedRevocationsFailClosed: a node without a ledger judges the
// signers of answers by the query group's revocations (AskedRevocations):
// a signer they revoke is refused; with no node serving the group the
// answer is taken; a question answered with an error, or by a node its
// own list revokes, refuses the answer, and is asked again at the next
// check rather than remembered.
func TestAskedRevocationsFailClosed(t *testing.T) {
	k := newSignedKit(t)
	ledger := k.identity(trust.KindNode, "ledger-a", event.RoleOrchestrator)
	evil := k.identity(trust.KindNode, "ledger-x", event.RoleOrchestrator)
	v := &Trust{Verifier: envelope.NewVerifier(k.root)}
	ask := &AskedRevocations{Client: NewClient(connect(t, k.url), time.Second), Trust: v, MaxAge: time.Hour}
	signer := func(id *trust.Identity) *trust.Credential {
		c, err := trust.ReadCredential(id.Credential)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Nobody serves the query group: nothing can revoke, the answer is taken.
	if err := ask.Check(signer(evil)); err != nil {
		t.Fatalf("no node in the query group: %v, want cleared", err)
	}

	var fail atomic.Bool
	fail.Store(true)
	k.serveRevocations("ledger-a", ledger, func() ([]Revocation, error) {
		if fail.Load() {
			return nil, errors.New("the ledger is busy")
		}
		return []Revocation{{CredentialRevokedData: event.CredentialRevokedData{Kind: trust.KindNode, ID: "ledger-x",
			Before: time.Now().Add(time.Minute), Reason: "compromised"}}}, nil
	})
	if err := ask.Check(signer(ledger)); err == nil || !strings.Contains(err.Error(), "cannot be checked against the ledger's revocations") {
		t.Fatalf("an error answer: %v, want refused", err)
	}
	fail.Store(false) // the failure was not remembered: asked again
	if err := ask.Check(signer(evil)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a revoked signer: %v, want refused", err)
	}
	if err := ask.Check(signer(ledger)); err != nil {
		t.Fatalf("a signer not revoked: %v", err)
	}

	// The revoked node answers the question itself: its list revokes it.
	k2 := newSignedKit(t)
	evil2 := k2.identity(trust.KindNode, "ledger-x", event.RoleOrchestrator)
	k2.serveRevocations("ledger-x", evil2, func() ([]Revocation, error) {
		return []Revocation{{CredentialRevokedData: event.CredentialRevokedData{Kind: trust.KindNode, ID: "ledger-x",
			Before: time.Now().Add(time.Minute)}}}, nil
	})
	ask2 := &AskedRevocations{Client: NewClient(connect(t, k2.url), time.Second),
		Trust: &Trust{Verifier: envelope.NewVerifier(k2.root)}, MaxAge: time.Hour}
	if err := ask2.Check(signer(evil2)); err == nil || !strings.Contains(err.Error(), "answered the revocations with its own among them") {
		t.Fatalf("a revoked node answering the revocations: %v, want refused", err)
	}
}
