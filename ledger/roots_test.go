package ledger_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// rootAdded is the trust.root_added draft for root, with its proof for
// the cluster of genesis.
func rootAdded(root, genesis *trust.Root) event.Draft {
	proof, err := root.RootProof(genesis.KeyID())
	if err != nil {
		panic(err)
	}
	return event.MustDraft(event.RootAdded, "", event.RootAddedData{
		Key: hex.EncodeToString(root.Public), KeyID: root.KeyID(), Reason: "rotation", Proof: proof})
}

func rootRetired(id string) event.Draft {
	return event.MustDraft(event.RootRetired, "", event.RootRetiredData{KeyID: id, Reason: "cutover"})
}

// rotation is a history through a root rotation, folded one message at a
// time as the follower does (each message verified once the ledger holds
// the ones before), with what each message became ("" accepted).
type rotation struct {
	kit      *ledgertest.Kit
	newRoot  *trust.Root
	oldAdmin *trust.Identity
	msgs     []ledger.Message
	codes    []event.RejectCode
}

// fold verifies and appends the messages of a rotation history into st
// with a verifier judging by st's roots, as ledger/follow wires them.
func newRotation(t *testing.T, st *ledger.Store) *rotation {
	t.Helper()
	kit := ledgertest.NewKit(t)
	newRoot, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	h := &rotation{kit: kit, newRoot: newRoot}
	v := envelope.NewVerifier(kit.Root)
	st.SetGenesis(kit.Root.Public)
	v.UseLedgerRoots(st)
	ident := func(r *trust.Root, id, kind string, roles ...string) *trust.Identity {
		i, err := trust.NewIdentity(r, id, kind, roles, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	h.oldAdmin = ident(kit.Root, "adm", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	oldExec := ident(kit.Root, "ex1", trust.KindNode, event.RoleExecutor)
	newExec := ident(newRoot, "ex1", trust.KindNode, event.RoleExecutor)
	newAdmin := ident(newRoot, "adm2", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	stranger, _ := trust.NewRoot()
	strangerAdmin := ident(stranger, "adm", trust.KindOperator, event.RoleAdmin)
	add := func(signer *trust.Identity, code event.RejectCode, drafts ...event.Draft) {
		t.Helper()
		seq := uint64(len(h.msgs) + 1)
		raw, subj, err := sign(signer, drafts)
		if err != nil {
			t.Fatal(err)
		}
		m := receive(v, seq, subj, raw, time.Now())
		mustAppend(t, st, m)
		h.msgs = append(h.msgs, m)
		h.codes = append(h.codes, code)
	}
	add(oldExec, "", started("r1", 1)...)                                                             // 1: the genesis root's credential
	add(newExec, event.RejectUnknownSigner, started("r2", 1)...)                                      // 2: the new root is not trusted yet
	add(kit.Operator, event.RejectRoleNotAllowed, rootAdded(newRoot, kit.Root))                       // 3: not an administrator
	add(strangerAdmin, event.RejectUnknownSigner, rootAdded(stranger, stranger))                      // 4: an admin of another cluster
	add(h.oldAdmin, event.RejectBadPayload, event.MustDraft(event.RootAdded, "", event.RootAddedData{ // 5: key and id disagree
		Key: hex.EncodeToString(newRoot.Public), KeyID: kit.Root.KeyID()}))
	add(h.oldAdmin, event.RejectBadPayload, rootRetired(kit.Root.KeyID()))  // 6: the last trusted root
	add(h.oldAdmin, event.RejectBadPayload, rootAdded(newRoot, stranger))   // 7: a proof for another cluster
	add(h.oldAdmin, "", rootAdded(newRoot, kit.Root))                       // 8: the overlap starts
	add(newExec, "", started("r3", 1)...)                                   // 9: the new root's credential
	add(oldExec, "", started("r4", 1)...)                                   // 10: and the old one's, both trusted
	add(h.oldAdmin, event.RejectBadPayload, rootAdded(newRoot, kit.Root))   // 11: added already
	add(newAdmin, event.RejectBadPayload, rootRetired("00000000deadbeef"))  // 12: not a root of this cluster
	add(newAdmin, "", rootRetired(kit.Root.KeyID()))                        // 13: the cutover
	add(oldExec, event.RejectRootRetired, started("r5", 1)...)              // 14: refused from now on
	add(h.oldAdmin, event.RejectRootRetired, rootAdded(stranger, kit.Root)) // 15: its admins too
	add(newExec, "", started("r6", 1)...)                                   // 16: the new root's go on
	add(newAdmin, event.RejectBadPayload, rootRetired(newRoot.KeyID()))     // 17: now the last trusted root
	return h
}

func sign(signer *trust.Identity, drafts []event.Draft) ([]byte, string, error) {
	raw, _, err := envelope.Sign(signer, drafts)
	return raw, drafts[0].Subject(), err
}

// receive is what the follower does with one stream message.
func receive(v *envelope.Verifier, seq uint64, subject string, raw []byte, at time.Time) ledger.Message {
	m := ledger.Message{StreamSeq: seq, Subject: subject, Time: at, Raw: raw}
	env, err := v.Verify(raw, subject, at)
	if err != nil {
		rej := envelope.AsRejection(err)
		rec := rej.Record(subject)
		m.EnvelopeID, m.Reject = rej.Claimed.ID, &rec
		return m
	}
	m.EnvelopeID, m.Events, m.Signer = env.ID, env.Events, env.Signer
	return m
}

// rootVerdicts is what each stream message became in st: its first record's
// rejection code, "" when accepted.
func rootVerdicts(t *testing.T, st *ledger.Store) []event.RejectCode {
	t.Helper()
	var out []event.RejectCode
	last := uint64(0)
	for _, rec := range collect(t, st.Scan(1)) {
		if rec.Event.StreamSeq == last {
			continue
		}
		last = rec.Event.StreamSeq
		var code event.RejectCode
		if rec.Event.Type == event.Rejected {
			code = rejectedData(t, rec.Event).Code
		}
		out = append(out, code)
	}
	return out
}

// TestRootRotation: a new root's credentials are refused before its
// trust.root_added and accepted after; the old root's stay accepted
// during the overlap and are refused after its trust.root_retired, while
// what they signed before stays and verifies; a root_added from a
// non-admin, from another cluster or with a bad payload is refused, and so
// is retiring the last trusted root. A restart, a refold of the same
// stream and an imported copy reach the same roots and verdicts.
func TestRootRotation(t *testing.T) {
	dir := t.TempDir()
	st, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newRotation(t, st)
	if got := rootVerdicts(t, st); !reflect.DeepEqual(got, h.codes) {
		t.Fatalf("verdicts\n got %q\nwant %q", got, h.codes)
	}
	for _, rec := range collect(t, st.Scan(1)) {
		if rec.Event.Type == event.Rejected && rejectedData(t, rec.Event).Code == event.RejectRootRetired {
			t.Logf("%s", rejectedData(t, rec.Event).Reason)
		}
	}
	roots := st.Roots()
	want := []ledger.TrustedRoot{
		{KeyID: h.kit.Root.KeyID(), Key: base64.RawURLEncoding.EncodeToString(h.kit.Root.Public), Genesis: true, RetiredStream: 13},
		{KeyID: h.newRoot.KeyID(), Key: base64.RawURLEncoding.EncodeToString(h.newRoot.Public), AddedStream: 8},
	}
	if !reflect.DeepEqual(roots, want) {
		t.Fatalf("roots\n got %+v\nwant %+v", roots, want)
	}
	verify := func(st *ledger.Store, what string) {
		t.Helper()
		rep, err := st.Verify(envelope.NewVerifier(h.kit.Root))
		if err != nil || !rep.OK {
			t.Fatalf("%s: verify: %+v %v", what, rep, err)
		}
	}
	verify(st, "folded")
	_, head := st.Head()

	// A restart: the roots come back from the records.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetGenesis(h.kit.Root.Public)
	if got := st.Roots(); !reflect.DeepEqual(got, want) {
		t.Fatalf("roots after a restart\n got %+v\nwant %+v", got, want)
	}
	verify(st, "restarted")
	// The old root's credentials are still refused after the restart,
	// the new root's accepted.
	v := envelope.NewVerifier(h.kit.Root)
	v.UseLedgerRoots(st)
	oldExec, _ := trust.NewIdentity(h.kit.Root, "ex9", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	newExec, _ := trust.NewIdentity(h.newRoot, "ex9", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	for i, c := range []struct {
		id   *trust.Identity
		want event.RejectCode
	}{{oldExec, event.RejectRootRetired}, {newExec, ""}} {
		raw, subj, err := sign(c.id, started("r9", 1))
		if err != nil {
			t.Fatal(err)
		}
		recs := mustAppend(t, st, receive(v, uint64(len(h.msgs)+1+i), subj, raw, time.Now()))
		var got event.RejectCode
		if recs[0].Type == event.Rejected {
			got = rejectedData(t, recs[0]).Code
		}
		if got != c.want {
			t.Fatalf("after a restart, a credential of root %s: %q, want %q", c.id.ID, got, c.want)
		}
	}

	// The same stream folded again by another ledger: the same chain.
	st2, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	v2 := envelope.NewVerifier(h.kit.Root)
	st2.SetGenesis(h.kit.Root.Public)
	v2.UseLedgerRoots(st2)
	for _, m := range h.msgs {
		mustAppend(t, st2, receive(v2, m.StreamSeq, m.Subject, m.Raw, m.Time))
	}
	if _, h2 := st2.Head(); h2 != head {
		t.Fatal("a refold of the same stream gave another chain")
	}

	// An exported and imported copy holds the same roots.
	var buf bytes.Buffer
	if err := st2.Export(&buf); err != nil {
		t.Fatal(err)
	}
	st3, err := ledger.Import(t.TempDir(), &buf, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st3.Close() })
	st3.SetGenesis(h.kit.Root.Public)
	if got := st3.Roots(); !reflect.DeepEqual(got, want) {
		t.Fatalf("roots of an imported copy\n got %+v\nwant %+v", got, want)
	}
	verify(st3, "imported")
}

// TestVerifyFindsUntrustedRoot: a ledger whose record was accepted from a
// root that was not trusted at its position fails verification.
func TestVerifyFindsUntrustedRoot(t *testing.T) {
	st, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kit := ledgertest.NewKit(t)
	other, _ := trust.NewRoot()
	ex, _ := trust.NewIdentity(other, "ex1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	admin := kit.Identity("adm", trust.KindOperator, event.RoleAdmin)
	// A verifier that trusts the other root locally (roots.pub), not by
	// the ledger, accepts its credential before any root_added: what a
	// ledger must not hold.
	local := envelope.NewVerifier(kit.Root.WithTrusted(nil, other.Public))
	raw, subj, _ := sign(ex, started("r1", 1))
	mustAppend(t, st, receive(local, 1, subj, raw, time.Now()))
	raw, subj, _ = sign(admin, []event.Draft{rootAdded(other, kit.Root)})
	mustAppend(t, st, receive(local, 2, subj, raw, time.Now()))
	rep, err := st.Verify(envelope.NewVerifier(kit.Root))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.FirstBadSeq != 1 {
		t.Fatalf("verify passed a record of a root not trusted at its position: %+v", rep)
	}
	t.Logf("%s", rep.Err)
}

// CheckCredential refuses a credential of a root the ledger retired
// (ErrRootRetired), as Append refuses its messages, and not one of the
// root that stays.
func TestCheckCredentialRootRetired(t *testing.T) {
	st := ledgertest.Open(t)
	h := newRotation(t, st)
	for _, c := range []struct {
		root *trust.Root
		want error
	}{{h.kit.Root, ledger.ErrRootRetired}, {h.newRoot, nil}} {
		id, err := trust.NewIdentity(c.root, "op9", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := trust.ReadCredential(id.Credential)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CheckCredential(cred); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("a credential of root %s: %v, want %v", c.root.KeyID(), err, c.want)
		}
	}
}
