package envelope_test

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// keyring is a set of roots by KeyID.
type keyring map[string]ed25519.PublicKey

func (k keyring) RootKey(id string) (ed25519.PublicKey, bool) { p, ok := k[id]; return p, ok }

// TestVerifierRootsByIssuer: a credential is verified with the key of the
// root its iss names: the verifier's root and the roots it trusts locally
// — until a ledger's roots are given (UseLedgerRoots), from which on the
// genesis and the ledger's roots count, and the local ones no more.
func TestVerifierRootsByIssuer(t *testing.T) {
	genesis, _ := trust.NewRoot()
	local, _ := trust.NewRoot()
	added, _ := trust.NewRoot()
	sign := func(r *trust.Root) ([]byte, string) {
		t.Helper()
		id, err := trust.NewIdentity(r, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "s", Attempt: 1, Node: "exec-1"})
		raw, _, err := envelope.Sign(id, []event.Draft{d})
		if err != nil {
			t.Fatal(err)
		}
		return raw, d.Subject()
	}
	check := func(v *envelope.Verifier, r *trust.Root, want bool) {
		t.Helper()
		raw, subj := sign(r)
		env, err := v.Verify(raw, subj, time.Now())
		switch {
		case want && err != nil:
			t.Fatalf("credential of root %s refused: %v", r.KeyID(), err)
		case !want && !errors.Is(err, envelope.ErrRejected):
			t.Fatalf("credential of root %s accepted", r.KeyID())
		case !want && envelope.AsRejection(err).Code != event.RejectUnknownSigner:
			t.Fatalf("credential of root %s: %v, want unknown_signer", r.KeyID(), err)
		case want && env.Signer.Issuer != r.KeyID():
			t.Fatalf("signer's issuer %s, want %s", env.Signer.Issuer, r.KeyID())
		}
	}
	v := envelope.NewVerifier(genesis.WithTrusted(nil, local.Public))
	check(v, genesis, true)
	check(v, local, true)
	check(v, added, false)

	ring := keyring{}
	v.UseLedgerRoots(ring)
	check(v, genesis, true)
	check(v, local, false)
	check(v, added, false)
	ring[added.KeyID()] = added.Public
	check(v, added, true)

	// A copy with a keyring of its own judges by it alone.
	w := v.WithKeyring(keyring{})
	check(w, genesis, true)
	check(w, added, false)
	check(v, added, true)
}
