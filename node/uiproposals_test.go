package node_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProposalsOnTheDashboard: proposals an orchestrator recorded are
// listed on the dashboard's Proposals page, pending first, and each has a
// page with its change beside its rollback, its evidence linked to the
// events, its validation (a note's saying replay proves nothing) and
// every lifecycle state with who and when; text a proposal carries is
// escaped, and an unknown proposal is a 404.
// proposalNode starts a node with the ui role and returns it with a
// publish that signs as id: an orchestrator of the cluster (orchestrator
// below), over its own connection (an operator's may not publish a
// proposal), or the node's operator.
func proposalNode(t *testing.T) (n *nodetest.Node, orch *trust.Identity, publish func(id *trust.Identity, typ event.Type, v any)) {
	t.Helper()
	n = nodetest.Start(t, nodetest.Config(filepath.Join(t.TempDir(), "node")))
	ctx := context.Background()
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	orchDir := t.TempDir()
	orch, err = natsauth.Enroll(orchDir, root, "orch-2", []string{event.RoleOrchestrator}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := natsauth.NodeConnectOptions(orchDir, orch)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	orchJS, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish = func(id *trust.Identity, typ event.Type, v any) {
		t.Helper()
		js := n.JS
		if id == orch {
			js = orchJS
		}
		if err := bus.PublishSigned(ctx, js, id, event.MustDraft(typ, "", v)); err != nil {
			t.Fatal(err)
		}
	}
	return n, orch, publish
}

func TestProposalsOnTheDashboard(t *testing.T) {
	n, orch, publish := proposalNode(t)
	ctx := context.Background()
	publish(orch, event.ProposalCreated, event.ProposalCreatedData{ID: "p-defaults", Pattern: "timeouts", Subject: "fetch",
		Family: "nightly", Risk: "low", Approvers: 1, Evidence: []uint64{1, 2},
		Change:    event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(5 * time.Second)}},
		Rollback:  event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "nightly"}},
		RootCause: "three runs timed out under the default timeout", ExpectedEffect: "the step finishes",
		Validation: event.Validation{Method: "replay", Summary: "3 of 3 would have passed", Pass: 3}})
	publish(orch, event.ProposalCreated, event.ProposalCreatedData{ID: "p-note", Pattern: "repeated-error", Subject: "<script>alert(1)</script>",
		Risk: "medium", Approvers: 1, Evidence: []uint64{3},
		Change:    event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "add", ID: "n1", Text: "use --depth 1"}},
		Rollback:  event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "retire", ID: "n1"}},
		RootCause: "clones are slow", ExpectedEffect: "faster clones",
		Validation: event.Validation{Method: "forbidden-checks", Summary: "no forbidden words"}})
	// p-defaults is decided: rejected by the operator, with a reason.
	publish(n.Operator, event.ProposalRejected, event.ProposalDecidedData{Proposal: "p-defaults", Reason: "the mirror is fixed"})
	poll.Eventually(t, 30*time.Second, "p-defaults rejected, p-note pending", func() bool {
		var p improve.Proposal
		err := n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: "p-defaults"}, &p)
		var q improve.Proposal
		return err == nil && p.Status == improve.StatusRejected &&
			n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: "p-note"}, &q) == nil && q.Status == improve.StatusPending
	})

	base := "http://" + n.HTTPAddr()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/proposals")
	if code != http.StatusOK {
		t.Fatalf("/proposals: %d\n%.2000s", code, body)
	}
	note, defaults := strings.Index(body, `data-proposal="p-note"`), strings.Index(body, `data-proposal="p-defaults"`)
	if note < 0 || defaults < 0 || note > defaults {
		t.Fatalf("/proposals: want p-note (pending) listed before p-defaults (rejected):\n%.3000s", body)
	}
	if strings.Contains(body, "<script>alert(1)") || !strings.Contains(body, html.EscapeString("<script>alert(1)</script>")) {
		t.Fatalf("/proposals: the subject not escaped:\n%.3000s", body)
	}
	if !strings.Contains(body, `href="/proposals"`) {
		t.Fatal("/proposals: no nav link to the page")
	}

	code, body = get("/proposals/p-defaults")
	for _, want := range []string{
		`<td>defaults.timeout</td><td><pre></pre></td><td><pre>5s</pre></td>`,
		`href="/events/1"`, `href="/events/2"`,
		"three runs timed out under the default timeout", "3 of 3 would have passed",
		`data-state="pending"`, `data-state="rejected"`, n.Operator.ID, "the mirror is fixed",
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/proposals/p-defaults: %d, want %q in:\n%.4000s", code, want, body)
		}
	}
	if strings.Contains(body, "Replay proves nothing") || strings.Contains(body, "agentctl proposal approve") {
		t.Errorf("/proposals/p-defaults: a replayed, decided proposal says replay proves nothing or offers a decision")
	}
	code, body = get("/proposals/p-note")
	for _, want := range []string{"Replay proves nothing", "use --depth 1", `href="/events/3"`, "agentctl proposal approve p-note"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/proposals/p-note: %d, want %q in:\n%.4000s", code, want, body)
		}
	}
	if code, body := get("/proposals/p-nothing"); code != http.StatusNotFound {
		t.Errorf("/proposals/p-nothing: %d, want 404:\n%.1000s", code, body)
	}
}

// TestProposalDecidedFromTheDashboard: a signed-in operator approves a
// pending proposal from its page; the ui node signs proposal.decided_for
// naming them and proposals.show says approved by that operator. A
// viewer sees no buttons and is refused (403), a form with a wrong CSRF
// token is refused, and neither records anything; a decided proposal is
// 409, an unknown one 404. With two approvers required, the same
// operator's approval through the page and through the CLI (their own
// signed proposal.approved) counts once; a second operator's, through the
// JSON API (POST /api/proposals/{id}/approve), completes it.
func TestProposalDecidedFromTheDashboard(t *testing.T) {
	n, orch, publish := proposalNode(t)
	ctx := context.Background()
	change := event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "add", ID: "n1", Text: "use --depth 1"}}
	rollback := event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "retire", ID: "n1"}}
	publish(orch, event.ProposalCreated, event.ProposalCreatedData{ID: "p-one", Pattern: "repeated-error", Subject: "clone",
		Risk: "low", Approvers: 1, Evidence: []uint64{1}, Change: change, Rollback: rollback,
		Validation: event.Validation{Method: "forbidden-checks", Summary: "no forbidden words"}})
	change.Note.ID, rollback.Note.ID = "n2", "n2"
	publish(orch, event.ProposalCreated, event.ProposalCreatedData{ID: "p-two", Pattern: "repeated-error", Subject: "fetch",
		Risk: "medium", Approvers: 2, Evidence: []uint64{1}, Change: change, Rollback: rollback,
		Validation: event.Validation{Method: "forbidden-checks", Summary: "no forbidden words"}})
	show := func(id string) improve.Proposal {
		t.Helper()
		var p improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: id}, &p); err != nil {
			t.Fatalf("proposals.show %s: %v", id, err)
		}
		return p
	}
	poll.Eventually(t, 30*time.Second, "both proposals pending", func() bool {
		var p improve.Proposal
		return n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: "p-two"}, &p) == nil && p.Status == improve.StatusPending
	})

	base := "http://" + n.HTTPAddr()
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	token := func(id *trust.Identity) string {
		t.Helper()
		tok, err := trust.APIToken(id, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	post := func(c *http.Client, path string, form url.Values) (int, string) {
		t.Helper()
		resp, err := c.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const form = `action="/proposals/p-one/decide"`

	// A viewer sees no buttons; their forged approval is refused.
	viewer, err := trust.NewIdentity(root, "vera", trust.KindOperator, []string{trust.ViewerRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	vc := newDashClient()
	dashLogin(t, vc, base, token(viewer))
	vcsrf, body := dashCSRF(t, vc, base+"/proposals/p-one")
	if strings.Contains(body, form) {
		t.Errorf("a viewer is shown the decide form:\n%.3000s", body)
	}
	if code, body := post(vc, "/proposals/p-one/decide", url.Values{"csrf": {vcsrf}, "action": {"approve"}}); code != http.StatusForbidden {
		t.Errorf("a viewer's approval: %d, want 403:\n%.1000s", code, body)
	}

	// The operator sees the buttons; a wrong CSRF token is refused.
	op := newDashClient()
	dashLogin(t, op, base, token(n.Operator))
	csrf, body := dashCSRF(t, op, base+"/proposals/p-one")
	if !strings.Contains(body, form) || !strings.Contains(body, `value="approve"`) || !strings.Contains(body, `value="reject"`) {
		t.Fatalf("the operator is shown no Approve / Reject:\n%.4000s", body)
	}
	if code, body := post(op, "/proposals/p-one/decide", url.Values{"csrf": {"x" + csrf}, "action": {"reject"}, "reason": {"no"}}); code != http.StatusForbidden {
		t.Errorf("a wrong CSRF token: %d, want 403:\n%.1000s", code, body)
	}
	if code, body := post(op, "/proposals/p-nothing/decide", url.Values{"csrf": {csrf}, "action": {"approve"}}); code != http.StatusNotFound {
		t.Errorf("an unknown proposal: %d, want 404:\n%.1000s", code, body)
	}
	if code, body := post(op, "/proposals/p-one/decide", url.Values{"csrf": {csrf}, "action": {"approve"}, "reason": {"looks right"}}); code != http.StatusOK {
		t.Fatalf("the operator's approval: %d:\n%.2000s", code, body)
	}
	// The leader applies an approved proposal at once: look for the
	// approval in its history, whatever state it has reached since.
	approval := func(p improve.Proposal) *improve.Transition {
		for i := range p.History {
			if p.History[i].Status == improve.StatusApproved {
				return &p.History[i]
			}
		}
		return nil
	}
	poll.Eventually(t, 30*time.Second, "p-one decided", func() bool { return show("p-one").Status != improve.StatusPending })
	p := show("p-one")
	a := approval(p)
	if a == nil || len(p.ApprovedBy) != 1 || p.ApprovedBy[0] != n.Operator.ID {
		t.Fatalf("p-one: %s approved by %v, want approved by %s alone (nothing of the refused forms): %+v", p.Status, p.ApprovedBy, n.Operator.ID, p.History)
	}
	if a.By != n.Operator.ID || a.Note != "looks right" {
		t.Errorf("p-one's approval: by %q note %q, want by %s, \"looks right\"", a.By, a.Note, n.Operator.ID)
	}
	if code, body := post(op, "/proposals/p-one/decide", url.Values{"csrf": {csrf}, "action": {"reject"}, "reason": {"late"}}); code != http.StatusConflict {
		t.Errorf("deciding a decided proposal: %d, want 409:\n%.1000s", code, body)
	}
	if _, body := dashCSRF(t, op, base+"/proposals/p-one"); strings.Contains(body, form) {
		t.Errorf("a decided proposal shows the decide form")
	}

	// Two approvers: the operator through the page and through the CLI
	// counts once; a second operator completes it through the JSON API.
	if code, body := post(op, "/proposals/p-two/decide", url.Values{"csrf": {csrf}, "action": {"approve"}}); code != http.StatusOK {
		t.Fatalf("p-two through the page: %d:\n%.2000s", code, body)
	}
	publish(n.Operator, event.ProposalApproved, event.ProposalDecidedData{Proposal: "p-two"})
	poll.Eventually(t, 30*time.Second, "p-two's first approval", func() bool { return len(show("p-two").ApprovedBy) > 0 })
	// Had the CLI's approval counted again, p-two would be approved by
	// the operator twice, and olga's approval below refused.
	olga, err := trust.NewIdentity(root, "olga", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The JSON API takes the same decision for a bearer token: none is
	// 401, a viewer's 403; olga's completes p-two.
	if code, body := postAuth(t, base+"/api/proposals/p-two/approve", "", map[string]string{}); code != http.StatusUnauthorized {
		t.Errorf("POST /api/proposals/p-two/approve without a token: %d, want 401:\n%.1000s", code, body)
	}
	if code, body := postAuth(t, base+"/api/proposals/p-two/approve", token(viewer), map[string]string{}); code != http.StatusForbidden {
		t.Errorf("POST /api/proposals/p-two/approve by a viewer: %d, want 403:\n%.1000s", code, body)
	}
	if code, body := postAuth(t, base+"/api/proposals/p-two/approve", token(olga), map[string]string{"reason": "checked"}); code != http.StatusAccepted ||
		!strings.Contains(body, `"operator": "olga"`) {
		t.Fatalf("POST /api/proposals/p-two/approve by olga: %d:\n%.2000s", code, body)
	}
	poll.Eventually(t, 30*time.Second, "p-two approved", func() bool { return approval(show("p-two")) != nil })
	if p := show("p-two"); len(p.ApprovedBy) != 2 || p.ApprovedBy[0] != n.Operator.ID || p.ApprovedBy[1] != "olga" {
		t.Errorf("p-two approved by %v, want %s then olga", p.ApprovedBy, n.Operator.ID)
	}
}
