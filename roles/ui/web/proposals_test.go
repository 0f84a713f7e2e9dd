package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/ui"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// proposalServer serves the dashboard with ps as the node's proposals
// (nil ps: a node that cannot tell).
func proposalServer(t *testing.T, ps []tuning.Proposal) *httptest.Server {
	t.Helper()
	src := newLedger().source()
	if ps != nil {
		src.Proposals = func(context.Context) ([]tuning.Proposal, error) { return ps, nil }
		src.Proposal = func(_ context.Context, id string) (tuning.Proposal, error) {
			for _, p := range ps {
				if p.ID == id {
					return p, nil
				}
			}
			return tuning.Proposal{}, fmt.Errorf("%w: no proposal %q", apiwire.ErrNotFound, id)
		}
	}
	s, err := web.New(src, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })
	return srv
}

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func proposal(id string, seq uint64, st tuning.Status, c, rollback event.Change) tuning.Proposal {
	return tuning.Proposal{ProposalCreatedData: event.ProposalCreatedData{ID: id, Pattern: "denials", Subject: "git push",
		Risk: "high", Approvers: 2, Evidence: []uint64{seq - 1}, Change: c, Rollback: rollback,
		Validation: event.Validation{Method: "rejudge", Summary: "2 commands now allowed"}},
		Status: st, Seq: seq, Created: t0, History: []tuning.Transition{{Status: tuning.StatusPending, Seq: seq, At: t0, By: "orch-1"}}}
}

// TestProposalsPage: pending proposals come first, then the newest; a
// policy change is shown field by field against its rollback, its text
// escaped; an unknown id is a 404; a node that cannot list proposals
// says so.
func TestProposalsPage(t *testing.T) {
	pol := func(base int64, text string) event.Change {
		return event.Change{Kind: event.ChangePolicy, Setting: event.SettingPolicy, Policy: &event.PolicyChange{Base: base, Text: text, Hash: "sha256:" + text[:4]}}
	}
	ps := []tuning.Proposal{
		proposal("p-old-pending", 10, tuning.StatusPending, pol(1, "allow: <b>git push</b>"), pol(2, "allow: none")),
		proposal("p-applied", 30, tuning.StatusApplied, pol(1, "allow: ls"), pol(2, "allow: none")),
		proposal("p-new-pending", 20, tuning.StatusPending, pol(1, "allow: cat"), pol(2, "allow: none")),
	}
	srv := proposalServer(t, ps)
	code, body := getPage(t, srv.URL+"/proposals")
	if code != http.StatusOK {
		t.Fatalf("/proposals: %d\n%s", code, body)
	}
	order := []int{strings.Index(body, `"p-new-pending"`), strings.Index(body, `"p-old-pending"`), strings.Index(body, `"p-applied"`)}
	if order[0] < 0 || order[0] > order[1] || order[1] > order[2] {
		t.Fatalf("/proposals: want p-new-pending, p-old-pending, p-applied in that order (%v):\n%s", order, body)
	}
	code, body = getPage(t, srv.URL+"/proposals/p-old-pending")
	for _, want := range []string{
		`<tr class="changed"><td>policy.text</td><td><pre>allow: none</pre></td><td><pre>allow: &lt;b&gt;git push&lt;/b&gt;</pre></td></tr>`,
		`<tr class="changed"><td>policy.base</td><td><pre>version 2</pre></td><td><pre>version 1</pre></td></tr>`,
		`<tr><td>kind</td><td><pre>policy</pre></td><td><pre>policy</pre></td></tr>`,
		`href="/events/9"`, "approvals 0 of 2", "agentctl proposal approve p-old-pending",
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/proposals/p-old-pending: %d, want %q in:\n%s", code, want, body)
		}
	}
	if strings.Contains(body, "Replay proves nothing") {
		t.Error("a policy change, rejudged, says replay proves nothing")
	}
	if code, _ := getPage(t, srv.URL+"/proposals/p-none"); code != http.StatusNotFound {
		t.Errorf("an unknown proposal: %d, want 404", code)
	}

	none := proposalServer(t, nil)
	if code, body := getPage(t, none.URL+"/proposals"); code != http.StatusOK || !strings.Contains(body, "cannot list the self-improvement proposals") {
		t.Errorf("/proposals on a node without them: %d\n%s", code, body)
	}
	if code, _ := getPage(t, none.URL+"/proposals/p-old-pending"); code == http.StatusOK {
		t.Error("a proposal page on a node without proposals answered 200")
	}
}

// TestProposalDecidedFromThePage: Approve and Reject are shown to a
// signed-in operator on a pending proposal alone; from the page they are
// the ui node's proposal.decided_for naming the operator. Without the
// form's CSRF token, from another origin or site, anonymous, a viewer's,
// a rejection without a reason, an unknown action, or on a decided
// proposal, nothing is recorded.
func TestProposalDecidedFromThePage(t *testing.T) {
	pol := event.Change{Kind: event.ChangePolicy, Setting: event.SettingPolicy, Policy: &event.PolicyChange{Base: 1, Text: "allow: cat", Hash: "sha256:allo"}}
	ps := []tuning.Proposal{
		proposal("p-pending", 10, tuning.StatusPending, pol, pol),
		proposal("p-applied", 30, tuning.StatusApplied, pol, pol),
	}
	show := func(_ context.Context, id string) (tuning.Proposal, error) {
		for _, p := range ps {
			if p.ID == id {
				return p, nil
			}
		}
		return tuning.Proposal{}, fmt.Errorf("%w: no proposal %q", apiwire.ErrNotFound, id)
	}
	l := newLedger()
	em := &emitted{}
	u := ui.New(l).WithGates(ui.Gates{List: l.Gates, Emit: em, Operator: operators, Proposal: show})
	src := l.source()
	src.Operator, src.Decide, src.Proposal = operators, u.DecideProposal, show
	s, err := web.New(src, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })

	const form = `action="/proposals/p-pending/decide"`
	anon, viewer, op := newBrowser(t, srv.URL), newBrowser(t, srv.URL), newBrowser(t, srv.URL)
	viewer.login("viewer-token")
	op.login("op-token")
	for name, b := range map[string]*browser{"anonymous": anon, "viewer": viewer} {
		if _, body, _ := b.do(http.MethodGet, "/proposals/p-pending", nil, nil); strings.Contains(body, form) {
			t.Errorf("%s is shown the decide form", name)
		}
	}
	if _, body, _ := op.do(http.MethodGet, "/proposals/p-applied", nil, nil); strings.Contains(body, "/decide\"") {
		t.Error("a decided proposal shows the decide form")
	}
	if _, body, _ := op.do(http.MethodGet, "/proposals/p-pending", nil, nil); !strings.Contains(body, form) {
		t.Fatalf("the operator is not shown the decide form:\n%s", body)
	}
	csrf, vcsrf, acsrf := op.csrf("/proposals/p-pending"), viewer.csrf("/login"), anon.csrf("/login")
	for name, c := range map[string]struct {
		b      *browser
		path   string
		form   url.Values
		header map[string]string
		want   int
	}{
		"no csrf":        {op, "p-pending", url.Values{"action": {"approve"}}, nil, http.StatusForbidden},
		"wrong csrf":     {op, "p-pending", url.Values{"csrf": {strings.Repeat("x", 43)}, "action": {"approve"}}, nil, http.StatusForbidden},
		"other origin":   {op, "p-pending", url.Values{"csrf": {csrf}, "action": {"approve"}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		"cross-site":     {op, "p-pending", url.Values{"csrf": {csrf}, "action": {"approve"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		"anonymous":      {anon, "p-pending", url.Values{"csrf": {acsrf}, "action": {"approve"}}, nil, http.StatusUnauthorized},
		"viewer":         {viewer, "p-pending", url.Values{"csrf": {vcsrf}, "action": {"approve"}}, nil, http.StatusForbidden},
		"reject, no why": {op, "p-pending", url.Values{"csrf": {csrf}, "action": {"reject"}, "reason": {"  "}}, nil, http.StatusBadRequest},
		"no such action": {op, "p-pending", url.Values{"csrf": {csrf}, "action": {"apply"}}, nil, http.StatusBadRequest},
		"decided":        {op, "p-applied", url.Values{"csrf": {csrf}, "action": {"approve"}}, nil, http.StatusConflict},
		"unknown":        {op, "p-none", url.Values{"csrf": {csrf}, "action": {"approve"}}, nil, http.StatusNotFound},
	} {
		if code, body, _ := c.b.do(http.MethodPost, "/proposals/"+c.path+"/decide", c.form, c.header); code != c.want {
			t.Errorf("%s: %d, want %d: %.300s", name, code, c.want, body)
		}
	}
	if n := em.count(); n != 0 {
		t.Fatalf("refused decisions recorded %d events", n)
	}
	code, _, h := op.do(http.MethodPost, "/proposals/p-pending/decide", url.Values{"csrf": {csrf}, "action": {"reject"}, "reason": {"not <b>now</b>"}}, nil)
	if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/proposals/p-pending?decided=reject") {
		t.Fatalf("the rejection: %d to %q", code, h.Get("Location"))
	}
	if em.count() != 1 {
		t.Fatalf("%d events recorded, want 1", em.count())
	}
	d := em.drafts[0]
	var got event.ProposalDecidedForData
	if err := json.Unmarshal(d.Data, &got); err != nil || d.Type != event.ProposalDecidedFor || got.Action != event.ProposalReject ||
		got.Proposal != "p-pending" || got.Reason != "not <b>now</b>" || got.Operator == "" {
		t.Errorf("recorded %s %+v (%v), want proposal.decided_for rejecting p-pending for the operator", d.Type, got, err)
	}
}
