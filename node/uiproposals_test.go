package node_test

import (
	"context"
	"html"
	"io"
	"net/http"
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
func TestProposalsOnTheDashboard(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(filepath.Join(t.TempDir(), "node")))
	ctx := context.Background()
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// An orchestrator of the cluster records the proposals, over its own
	// connection (an operator's may not publish them).
	orchDir := t.TempDir()
	orch, err := natsauth.Enroll(orchDir, root, "orch-2", []string{event.RoleOrchestrator}, time.Hour, false)
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
	defer nc.Close()
	orchJS, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(id *trust.Identity, typ event.Type, v any) {
		t.Helper()
		js := n.JS
		if id == orch {
			js = orchJS
		}
		if err := bus.PublishSigned(ctx, js, id, event.MustDraft(typ, "", v)); err != nil {
			t.Fatal(err)
		}
	}
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
