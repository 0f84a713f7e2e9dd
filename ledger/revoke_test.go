package ledger_test

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"pgregory.net/rapid"
)

// revokeHistory is a history with a revocation: what each message became
// is in codes ("" accepted).
type revokeHistory struct {
	kit     *ledgertest.Kit
	exec    *trust.Identity // revoked
	exec2   *trust.Identity // the same id enrolled again after the revocation
	admin   *trust.Identity
	before  time.Time
	msgs    []ledger.Message
	codes   []event.RejectCode
	natsKey string
}

func newRevokeHistory(t *testing.T) *revokeHistory {
	t.Helper()
	kit := ledgertest.NewKit(t)
	h := &revokeHistory{kit: kit}
	h.exec = kit.Identity("ex1", trust.KindNode, event.RoleExecutor)
	h.admin = kit.Identity("adm", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	cred, err := trust.ReadCredential(h.exec.Credential)
	if err != nil {
		t.Fatal(err)
	}
	if h.natsKey, err = trust.NATSUserKey(h.exec.Key); err != nil || cred.NATSUser != h.natsKey {
		t.Fatalf("credential names NATS user %q, want %q (%v)", cred.NATSUser, h.natsKey, err)
	}
	h.before = cred.Issued
	// Credential times are whole seconds: the identity enrolled again
	// must be issued in a later one than the revocation's Before.
	poll.Eventually(t, 3*time.Second, "the clock to pass the revoked credential's second", func() bool {
		return time.Now().Truncate(time.Second).After(h.before)
	})
	h.exec2 = kit.Identity("ex1", trust.KindNode, event.RoleExecutor)
	op := kit.Operator // an operator without the admin role

	revoke := func(kind, id string) event.Draft {
		return event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
			Kind: kind, ID: id, Before: h.before, NATSUsers: []string{h.natsKey}, Reason: "key lost"})
	}
	add := func(signer *trust.Identity, code event.RejectCode, drafts ...event.Draft) {
		seq := uint64(len(h.msgs) + 1)
		raw, subj := kit.Sign(signer, drafts...)
		h.msgs = append(h.msgs, kit.Receive(seq, subj, raw, time.Now()))
		h.codes = append(h.codes, code)
	}
	add(h.exec, "", started("r1", 2)...)                                                       // 1: accepted, stays
	add(op, event.RejectRoleNotAllowed, revoke(trust.KindNode, "ex1"))                         // 2: not an administrator
	add(h.exec, "", started("r2", 1)...)                                                       // 3: still accepted
	add(h.admin, "", revoke(trust.KindNode, "ex1"))                                            // 4: revokes ex1 up to before
	add(h.exec, event.RejectRevoked, started("r3", 1)...)                                      // 5: refused
	add(h.exec2, "", started("r4", 1)...)                                                      // 6: enrolled again: accepted
	add(h.admin, event.RejectBadPayload, revoke("account", "ex1"))                             // 7: not a kind
	add(h.admin, "", revoke(trust.KindOperator, "ex1"))                                        // 8: another kind, same id
	add(h.exec, event.RejectRevoked, started("r5", 1)...)                                      // 9: still refused
	add(h.kit.Node, "", started("r6", 1)...)                                                   // 10: others unaffected
	add(h.admin, "", revoke(trust.KindNode, h.kit.Node.ID))                                    // 11: revokes n1
	add(h.kit.Node, event.RejectRevoked, started("r7", 1)...)                                  // 12: refused
	add(h.admin, "", event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{ // 13: an earlier Before revokes no less
		Kind: trust.KindNode, ID: h.kit.Node.ID, Before: h.before.Add(-time.Hour), Reason: "again"}))
	add(h.kit.Node, event.RejectRevoked, started("r8", 1)...) // 14: refused
	return h
}

// verdicts returns what each message became: its records' codes, one per
// message ("" when its events were accepted).
func verdicts(t *testing.T, st *ledger.Store) map[uint64]event.RejectCode {
	t.Helper()
	out := map[uint64]event.RejectCode{}
	for _, rec := range collect(t, st.Scan(1)) {
		ev := rec.Event
		switch ev.Type {
		case event.Rejected:
			out[ev.StreamSeq] = rejectedData(t, ev).Code
		default:
			if _, ok := out[ev.StreamSeq]; !ok {
				out[ev.StreamSeq] = ""
			}
		}
	}
	return out
}

func checkVerdicts(t *testing.T, st *ledger.Store, h *revokeHistory) {
	t.Helper()
	got := verdicts(t, st)
	for i, want := range h.codes {
		if c, ok := got[uint64(i+1)]; !ok || c != want {
			t.Errorf("message %d: verdict %q (recorded %v), want %q", i+1, c, ok, want)
		}
	}
}

func exportOf(t *testing.T, st *ledger.Store) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := st.Export(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Events signed by a revoked credential are refused from the revocation's
// stream position on; the earlier ones stay; only an administrator
// revokes; an identity enrolled again after the revocation signs again.
func TestRevokedCredentialRefused(t *testing.T) {
	h := newRevokeHistory(t)
	st := ledgertest.Open(t)
	for _, m := range h.msgs {
		mustAppend(t, st, m) // one message per Append
	}
	checkVerdicts(t, st, h)
	rec, err := st.Get(1)
	if err != nil || rec.Event.Type != event.TaskStarted || rec.Event.Node != "ex1" {
		t.Fatalf("record 1 = %+v, %v; want ex1's task.started", rec.Event, err)
	}
	for _, rec := range collect(t, st.ScanType(event.Rejected, 1)) {
		if d := rejectedData(t, rec.Event); d.Code == event.RejectRevoked && (d.Signer == "" || d.ClaimedID == "" || d.Reason == "") {
			t.Errorf("record %d: refusal without signer, id or reason: %+v", rec.Event.Seq, d)
		}
	}
	rep, err := st.Verify(h.kit.Verifier)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}

	creds, err := st.Credentials(trust.KindNode, "ex1")
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) != 2 {
		t.Fatalf("credentials of ex1: %+v, want the two enrolments", creds)
	}
	first, second := creds[0], creds[1]
	exec1, _ := trust.ReadCredential(h.exec.Credential)
	if first.Key != trust.Fingerprint(exec1.PublicKey) || first.NATSUser != h.natsKey || first.FirstSeq != 1 ||
		!first.Issued.Equal(exec1.Issued) || !first.Expires.Equal(exec1.Expires) {
		t.Errorf("first credential %+v, want ex1's first, seen at 1", first)
	}
	exec2, _ := trust.ReadCredential(h.exec2.Credential)
	if second.Key != trust.Fingerprint(exec2.PublicKey) || second.NATSUser != exec2.NATSUser || !second.Issued.After(h.before) {
		t.Errorf("second credential %+v, want ex1's second", second)
	}
	if got, err := st.Credentials(trust.KindOperator, "ex1"); err != nil || len(got) != 0 {
		t.Errorf("operator ex1's credentials: %+v, %v; want none", got, err)
	}
	if got, err := st.Credentials(trust.KindOperator, "adm"); err != nil || len(got) != 1 {
		t.Errorf("adm's credentials: %+v, %v; want one", got, err)
	}
}

// The records depend on the stream alone: one Append or one per message,
// a restart between, an imported copy and an upgraded store all refuse
// the same messages and index the same credentials.
func TestRevocationsAreLedgerState(t *testing.T) {
	h := newRevokeHistory(t)
	whole := ledgertest.Open(t)
	mustAppend(t, whole, h.msgs...)
	checkVerdicts(t, whole, h)

	// One message per Append, with a restart after the revocation.
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	for i, m := range h.msgs {
		mustAppend(t, st, m)
		if i == 3 { // after message 4, the revocation
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st = ledgertest.OpenDir(t, dir)
		}
	}
	if !bytes.Equal(exportOf(t, st), exportOf(t, whole)) {
		t.Fatal("the ledger folded one message per Append with a restart differs from the one folded at once")
	}

	// An imported copy.
	imported, err := ledger.Import(t.TempDir(), bytes.NewReader(exportOf(t, whole)), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { imported.Close() })

	// An older store, before the credentials index.
	upDir := t.TempDir()
	up := ledgertest.OpenDir(t, upDir)
	mustAppend(t, up, h.msgs...)
	if err := ledger.DropCredentialIndex(up); err != nil {
		t.Fatal(err)
	}
	if got, _ := up.Credentials(trust.KindNode, "ex1"); len(got) != 0 {
		t.Fatalf("dropped index still lists %+v", got)
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	up = ledgertest.OpenDir(t, upDir)

	ids := []struct{ kind, id string }{{trust.KindNode, "ex1"}, {trust.KindNode, "n1"}, {trust.KindOperator, "adm"}}
	want := map[string][]ledger.CredentialSeen{}
	for _, x := range ids {
		c, err := whole.Credentials(x.kind, x.id)
		if err != nil || len(c) == 0 {
			t.Fatalf("credentials of %s %s: %+v, %v", x.kind, x.id, c, err)
		}
		want[x.kind+"/"+x.id] = c
	}
	// Every ledger goes on with the same next messages and must refuse
	// the same.
	next := []ledger.Message{
		h.kit.Message(15, h.exec, started("r9", 1)...),
		h.kit.Message(16, h.exec2, started("r9", 1)...),
	}
	mustAppend(t, whole, next...)
	wantExport := exportOf(t, whole)
	for name, other := range map[string]*ledger.Store{"restarted": st, "imported": imported, "upgraded": up} {
		for _, x := range ids {
			got, err := other.Credentials(x.kind, x.id)
			if err != nil || !reflect.DeepEqual(got, want[x.kind+"/"+x.id]) {
				t.Errorf("%s: credentials of %s %s = %+v, %v\nwant %+v", name, x.kind, x.id, got, err, want[x.kind+"/"+x.id])
			}
		}
		mustAppend(t, other, next...)
		if !bytes.Equal(exportOf(t, other), wantExport) {
			t.Errorf("%s: the ledger differs after the next messages", name)
		}
	}
	if v := verdicts(t, whole); v[15] != event.RejectRevoked || v[16] != "" {
		t.Errorf("after the history: %q and %q, want credential_revoked and accepted", v[15], v[16])
	}
}

// Verify finds an event accepted from a revoked credential: what a copy
// from a peer that ignored a revocation would hold.
func TestVerifyFindsRevokedCredentialAccepted(t *testing.T) {
	h := newRevokeHistory(t)
	st := ledgertest.Open(t)
	revoked := h.msgs[4] // ex1's message after the revocation
	lied := *revoked.Signer
	lied.Issued = h.before.Add(time.Hour) // as if enrolled again
	revoked.Signer = &lied
	recs := mustAppend(t, st, append(append([]ledger.Message(nil), h.msgs[:4]...), revoked)...)
	last := recs[len(recs)-1]
	if last.Type != event.TaskStarted {
		t.Fatalf("the message was not accepted: %+v", last)
	}
	rep, err := st.Verify(h.kit.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.FirstBadSeq != last.Seq || !strings.Contains(rep.Err, "revocation at stream seq 4") {
		t.Fatalf("verify: %+v; want record %d found accepted from a revoked credential", rep, last.Seq)
	}
}

// Any stream of a revocation, messages of the revoked credential, of the
// identity enrolled again and of others — replays and holes included —
// gives one ledger however it is delivered (one Append, chunks, restarts,
// an import of the export): no event of the revoked credential is
// accepted after the revocation's first appearance, none of the new one
// is refused as revoked, and the credentials index is the same.
func TestPropertyRevocationsOneLedger(t *testing.T) {
	h := newRevokeHistory(t)
	kit := h.kit
	var pool []ledger.Message
	old := map[string]bool{} // envelope ids of the revoked credential's messages
	add := func(m ledger.Message, revoked bool) {
		pool = append(pool, m)
		old[m.EnvelopeID] = revoked
	}
	for range 3 {
		add(kit.Message(0, h.exec, started("r1", 1)...), true)
	}
	add(kit.Message(0, h.exec, started("r2", 3)...), true)
	for range 2 {
		add(kit.Message(0, h.exec2, started("r3", 1)...), false)
	}
	add(kit.Message(0, kit.Node, started("r4", 1)...), false)
	revoke := kit.Message(0, h.admin, event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
		Kind: trust.KindNode, ID: "ex1", Before: h.before, Reason: "property"}))
	add(revoke, false)
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		// Drawn as positions in the pool, so that a failure prints numbers.
		var stream []ledger.Message
		seq := uint64(0)
		for range rapid.IntRange(1, 30).Draw(rt, "n") {
			seq += 1 + uint64(rapid.IntRange(0, 9).Draw(rt, "skip")/8) // a hole 1 time in 5
			stream = append(stream, ledgertest.Redeliver(pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "pick")], seq))
		}
		dir, err := os.MkdirTemp(base, "p")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		open := func(name string) *ledger.Store {
			st, err := ledger.Open(dir+"/"+name, quietOptions())
			if err != nil {
				rt.Fatal(err)
			}
			return st
		}
		ref := open("ref")
		defer ref.Close()
		if _, err := ref.Append(stream); err != nil {
			rt.Fatal(err)
		}
		st := open("chunked")
		defer func() { st.Close() }()
		for pos := 0; pos < len(stream); {
			end := pos + rapid.IntRange(1, len(stream)-pos).Draw(rt, "chunk")
			if _, err := st.Append(stream[pos:end]); err != nil {
				rt.Fatal(err)
			}
			pos = end
			if rapid.IntRange(0, 3).Draw(rt, "restart") == 0 {
				if err := st.Close(); err != nil {
					rt.Fatal(err)
				}
				st = open("chunked")
			}
		}
		var export bytes.Buffer
		if err := ref.Export(&export); err != nil {
			rt.Fatal(err)
		}
		imp, err := ledger.Import(dir+"/imported", &export, quietOptions())
		if err != nil {
			rt.Fatal(err)
		}
		defer imp.Close()

		// The model, on the reference.
		revokedAt := uint64(0)
		for _, m := range stream {
			if m.EnvelopeID == revoke.EnvelopeID {
				revokedAt = m.StreamSeq
				break
			}
		}
		oldEvents := map[string]bool{}
		for _, m := range pool {
			for _, ev := range m.Events {
				oldEvents[ev.ID] = old[m.EnvelopeID]
			}
		}
		for _, rec := range collect(t, ref.Scan(1)) {
			ev := rec.Event
			switch {
			case ev.Type == event.Rejected:
				if d := rejectedData(t, ev); d.Code == event.RejectRevoked && (!old[d.ClaimedID] || revokedAt == 0 || ev.StreamSeq <= revokedAt) {
					rt.Fatalf("record %d: message %s refused as revoked (revocation at stream seq %d)", ev.Seq, d.ClaimedID, revokedAt)
				}
			case oldEvents[ev.ID] && revokedAt != 0 && ev.StreamSeq > revokedAt:
				rt.Fatalf("record %d: event %s of the revoked credential accepted at stream seq %d, after the revocation at %d", ev.Seq, ev.ID, ev.StreamSeq, revokedAt)
			}
		}

		// Every delivery: one index and the same verdict on a next message
		// of the revoked credential; chunks and restarts give one ledger.
		// (An import starts the rejection rate afresh: the limiter's state
		// is not part of an export, so its records after the copy may
		// differ in a flood of refusals; its verdicts do not.)
		next := kit.Message(0, h.exec, started("r9", 1)...)
		next.StreamSeq = ref.AppliedStreamSeq() + 1
		want, _ := ref.Credentials(trust.KindNode, "ex1")
		accepted := func(recs []event.Event) bool {
			return slices.ContainsFunc(recs, func(ev event.Event) bool { return ev.ID == next.Events[0].ID })
		}
		wantAccepted := accepted(mustAppend(t, ref, next))
		if wantAccepted != (revokedAt == 0) {
			rt.Fatalf("next message of the revoked credential accepted %v, revocation at stream seq %d", wantAccepted, revokedAt)
		}
		_, wantHead := ref.Head()
		for name, other := range map[string]*ledger.Store{"chunked": st, "imported": imp} {
			if got, err := other.Credentials(trust.KindNode, "ex1"); err != nil || !reflect.DeepEqual(got, want) {
				rt.Fatalf("%s: credentials %+v, %v; want %+v", name, got, err, want)
			}
			if accepted(mustAppend(t, other, next)) != wantAccepted {
				rt.Fatalf("%s: next message of the revoked credential accepted %v, want %v", name, !wantAccepted, wantAccepted)
			}
			if _, head := other.Head(); name == "chunked" && head != wantHead {
				rt.Fatalf("%s: head %x after the next message, want %x", name, head, wantHead)
			}
		}
	})
}

// CheckCredential, the check of a credential shown outside the stream (an
// HTTP API token), refuses what Append refuses: the revoked credential
// from the revocation's commit on, across a reopen, and not the identity
// enrolled again nor anyone else.
func TestCheckCredential(t *testing.T) {
	h := newRevokeHistory(t)
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	cred := func(id *trust.Identity) *trust.Credential {
		c, err := trust.ReadCredential(id.Credential)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	exec, exec2, admin := cred(h.exec), cred(h.exec2), cred(h.admin)
	if err := st.CheckCredential(exec); err != nil {
		t.Fatalf("before any revocation: %v", err)
	}
	for _, m := range h.msgs[:4] { // up to the administrator's revocation of ex1
		mustAppend(t, st, m)
	}
	check := func(st *ledger.Store) {
		t.Helper()
		err := st.CheckCredential(exec)
		if !errors.Is(err, ledger.ErrCredentialRevoked) || !strings.Contains(err.Error(), `node "ex1"`) || !strings.Contains(err.Error(), "stream seq 4") {
			t.Errorf("the revoked credential: %v, want ErrCredentialRevoked naming ex1 and stream seq 4", err)
		}
		for name, c := range map[string]*trust.Credential{"enrolled again": exec2, "another identity": admin} {
			if err := st.CheckCredential(c); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	check(st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	check(ledgertest.OpenDir(t, dir))
}
