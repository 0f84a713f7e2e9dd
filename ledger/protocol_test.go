package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// progress is a type this build does not know: what a node of a newer
// version would emit.
const progress event.Type = "task.progress"

// signAt signs drafts as signer with its clock at now, under version.
func signAt(t *testing.T, signer *trust.Identity, now time.Time, version int, drafts ...event.Draft) ([]byte, string) {
	t.Helper()
	raw, _, err := envelope.SignAt(signer, drafts, now, version)
	if err != nil {
		t.Fatal(err)
	}
	return raw, drafts[0].Subject()
}

// streamMsg is one stream message as it arrives: the same for every ledger.
type streamMsg struct {
	subject string
	raw     []byte
	at      time.Time
}

// mixedStream is a stream as a cluster in a rolling upgrade writes it:
// messages of versions 0, 1 and 2 (a type this build does not know),
// forgeries, replays, a message too late, a duplicate run.
func mixedStream(t *testing.T, kit *ledgertest.Kit) []streamMsg {
	now := time.Now()
	ex := kit.Identity("exec-1", trust.KindNode, event.RoleExecutor)
	pl := kit.Identity("planner-1", trust.KindNode, event.RolePlanner)
	stranger := ledgertest.NewKit(t).Node
	var out []streamMsg
	add := func(raw []byte, subject string, at time.Time) {
		out = append(out, streamMsg{subject: subject, raw: raw, at: at})
	}
	sign := func(signer *trust.Identity, version int, drafts ...event.Draft) {
		raw, subj := signAt(t, signer, now, version, drafts...)
		add(raw, subj, now)
	}
	sign(ex, 0, started("r1", 1)...)
	sign(ex, 1, started("r1", 3)...)
	sign(ex, envelope.Version+1, event.MustDraft(progress, "r1", map[string]int{"percent": 40}))
	sign(pl, envelope.Version+1, event.MustDraft(progress, "r1", map[string]int{"percent": 41}))
	sign(stranger, 1, started("r1", 1)...)
	add(out[0].raw, out[0].subject, now) // a replay
	goal := event.MustDraft(event.GoalSubmitted, "r2", event.GoalSubmittedData{Goal: "g"})
	sign(kit.Operator, 1, goal)
	again := goal
	again.ID = event.NewID()
	sign(kit.Operator, 0, again) // a second goal for r2
	raw, subj := signAt(t, ex, now, 1, started("r1", 1)...)
	add(raw, subj, now.Add(envelope.TTL+time.Minute)) // stored too late
	add([]byte("not a message"), "agentic.ev.task.started", now)
	return out
}

// feed verifies the stream with v and appends it to a fresh store.
func feed(t *testing.T, kit *ledgertest.Kit, v *envelope.Verifier, stream []streamMsg) *ledger.Store {
	t.Helper()
	k := *kit
	k.Verifier = v
	st := ledgertest.Open(t)
	for i, m := range stream {
		mustAppend(t, st, k.Receive(uint64(i+1), m.subject, m.raw, m.at))
	}
	return st
}

// Ledgers of nodes of adjacent versions — one that knows only version 0,
// this build, one of the next version that knows task.progress — fold the same
// stream into the same records: equal heads. Rejections carry codes and no
// library text; the unknown type is recorded as an event.
func TestMixedVersionLedgersAgree(t *testing.T) {
	kit := ledgertest.NewKit(t)
	table := envelope.Versions()
	v2 := table[envelope.Version]
	v2.Version = envelope.Version + 1
	v2.Types = append(v2.Types, event.Spec{Type: progress, Roles: []string{event.RoleExecutor}, Since: v2.Version})
	stream := mixedStream(t, kit)
	stores := map[string]*ledger.Store{
		"v0":   feed(t, kit, envelope.NewVerifier(kit.Root, envelope.WithRules(table[:1])), stream),
		"this": feed(t, kit, envelope.NewVerifier(kit.Root), stream),
		"next": feed(t, kit, envelope.NewVerifier(kit.Root, envelope.WithRules(append(table, v2))), stream),
	}
	_, want := stores["this"].Head()
	for name, st := range stores {
		if _, h := st.Head(); h != want {
			t.Errorf("%s: head %x, this build %x", name, h, want)
		}
	}
	codes := map[event.RejectCode]int{}
	kept := 0
	for _, rec := range collect(t, stores["this"].Scan(1)) {
		switch rec.Event.Type {
		case progress:
			kept++
			if rec.Event.Node != "exec-1" {
				t.Errorf("kept %s from %s", progress, rec.Event.Node)
			}
		case event.Rejected:
			d := rejectedData(t, rec.Event)
			codes[d.Code]++
			if !d.Code.Valid() {
				t.Errorf("record %d: code %q not in the list", rec.Event.Seq, d.Code)
			}
			for _, frag := range []string{"token", "jwt", "base64", "invalid character", "ed25519", "trust:", "envelope:"} {
				if strings.Contains(strings.ToLower(d.Reason), frag) {
					t.Errorf("record %d: reason %q carries library text", rec.Event.Seq, d.Reason)
				}
			}
		}
	}
	if kept != 1 {
		t.Errorf("%d %s events kept, want 1", kept, progress)
	}
	want2 := map[event.RejectCode]int{event.RejectRoleNotAllowed: 1, event.RejectUnknownSigner: 1, event.RejectReplayed: 1, event.RejectDuplicateRun: 1, event.RejectExpired: 1, event.RejectMalformed: 1}
	for c, n := range want2 {
		if codes[c] != n {
			t.Errorf("%d rejections %s, want %d (all: %v)", codes[c], c, n, codes)
		}
	}
	// Every ledger verifies by the rules of each message's version.
	for name, st := range stores {
		rep, err := st.Verify(kit.Verifier)
		if err != nil || !rep.OK {
			t.Errorf("%s: verify %+v %v", name, rep, err)
		}
	}
}

// ledger verify accepts a ledger holding messages of version 0 (made before
// versions), version 1 and a newer version with a type it does not know,
// judging each by its own version's rules.
func TestVerifyAcrossVersions(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	ex := kit.Identity("exec-1", trust.KindNode, event.RoleExecutor)
	now := time.Now()
	var seq uint64
	add := func(signer *trust.Identity, version int, drafts ...event.Draft) {
		raw, subj := signAt(t, signer, now, version, drafts...)
		seq++
		m := kit.Receive(seq, subj, raw, now)
		if m.Reject != nil {
			t.Fatalf("version %d refused: %+v", version, m.Reject)
		}
		mustAppend(t, st, m)
	}
	add(ex, 0, started("r1", 2)...)
	add(kit.Operator, 0, event.MustDraft(event.GoalSubmitted, "r2", event.GoalSubmittedData{Goal: "g"}))
	add(ex, 1, started("r1", 3)...)
	add(ex, 3, event.MustDraft(progress, "r1", map[string]int{"percent": 1}))
	rep, err := st.Verify(kit.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Events != 7 || rep.Versions[0] != 2 || rep.Versions[1] != 1 || rep.Versions[3] != 1 {
		t.Fatalf("verify: %+v", rep)
	}
}

// Every rejection the ledger itself makes carries its code; with the
// verifier's codes (bus/envelope's TestRejectionCodes) they cover the list.
func TestLedgerRejectionCodes(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	now := time.Now()
	ds := started("r1", 1)
	first := kit.Message(1, kit.Node, ds...)
	raw, subj := signAt(t, kit.Node, now.Add(-time.Second), envelope.Version, ds...)
	resigned := kit.Receive(3, subj, raw, now)
	dupEvent := kit.Message(4, kit.Node, append(started("r1", 1), ds[0])...)
	goal := event.MustDraft(event.GoalSubmitted, "r9", event.GoalSubmittedData{Goal: "g"})
	goal2 := event.MustDraft(event.GoalSubmitted, "r9", event.GoalSubmittedData{Goal: "g"})
	noID := kit.Message(8, kit.Node, started("r1", 1)...)
	noID.EnvelopeID, noID.Events[0].ID = "", ""
	badJSON := kit.Message(9, kit.Node, started("r1", 1)...)
	badJSON.Events[0].Data = []byte("{not json")
	admin := kit.Identity("adm", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	revoke := kit.Message(10, admin, event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
		Kind: trust.KindNode, ID: kit.Node.ID, Before: now.Add(time.Minute), Reason: "test"}))
	next, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	st.SetGenesis(kit.Root.Public)
	msgs := []ledger.Message{
		first,
		ledgertest.Redeliver(first, 2), // same bytes: replayed
		resigned,                       // same id, signed again: republished
		dupEvent,                       // carries ds[0] again: duplicate_event
		kit.Message(5, kit.Operator, goal),
		kit.Message(6, kit.Operator, goal2), // duplicate_run
		{StreamSeq: 7, Subject: subj, Time: now, Raw: []byte("x"), EnvelopeID: "e7"}, // no_events
		noID,
		badJSON,
		revoke,
		kit.Message(11, kit.Node, started("r1", 1)...), // credential_revoked
		kit.Message(12, admin, rootAdded(next, kit.Root)),
		kit.Message(13, admin, rootRetired(kit.Root.KeyID())),
		kit.Message(14, kit.Operator, event.MustDraft(event.GoalSubmitted, "r10", event.GoalSubmittedData{Goal: "g"})), // root_retired
	}
	want := []event.RejectCode{event.RejectReplayed, event.RejectRepublished, event.RejectDuplicateEvent, event.RejectDuplicateRun, event.RejectNoEvents, event.RejectMalformed, event.RejectBadPayload, event.RejectRevoked, event.RejectRootRetired}
	var got []event.RejectCode
	for _, ev := range mustAppend(t, st, msgs...) {
		if ev.Type == event.Rejected {
			d := rejectedData(t, ev)
			if d.Reason == "" {
				t.Errorf("record %d: code %s without reason", ev.Seq, d.Code)
			}
			got = append(got, d.Code)
		}
	}
	if strings.Join(codeStrings(got), " ") != strings.Join(codeStrings(want), " ") {
		t.Fatalf("codes %v, want %v", got, want)
	}
	all := event.RejectCodes()
	for i, c := range all {
		if c == event.RejectReplayed {
			if strings.Join(codeStrings(all[i:]), " ") != strings.Join(codeStrings([]event.RejectCode{event.RejectReplayed, event.RejectRepublished, event.RejectDuplicateEvent, event.RejectDuplicateRun, event.RejectNoEvents, event.RejectBadPayload, event.RejectRevoked, event.RejectRootRetired}), " ") {
				t.Fatalf("the ledger's codes are %v; a new one needs a case here", all[i:])
			}
		}
	}
}

func codeStrings(cs []event.RejectCode) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
