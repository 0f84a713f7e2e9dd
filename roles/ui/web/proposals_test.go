package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
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
