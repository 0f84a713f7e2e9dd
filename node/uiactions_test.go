package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestRunBrakesFromTheDashboard: an operator signed in to the ui node's
// dashboard pauses a running run from its page (its running step
// finishes, the next is not started), resumes it (it then succeeds), and
// cancels another run; a viewer's forged pause is refused. The ledger
// holds run.paused_for, run.resumed_for and run.cancel_requested_for,
// signed by the node and naming the operator.
func TestRunBrakesFromTheDashboard(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(filepath.Join(dir, "node")))
	ctx := context.Background()
	base := "http://" + n.HTTPAddr()
	marker := filepath.Join(dir, "after")
	run := submitGoal(t, n, "brakes", "goal: brakes\nsteps:\n  - id: slow\n    run: \"sleep 2\"\n  - id: after\n    run: \"touch "+marker+"\"\n    depends_on: [slow]\n")
	other := submitGoal(t, n, "long", "goal: long\nsteps:\n  - id: long\n    run: \"sleep 60\"\n")

	status := func(id string) event.RunStatus {
		s, err := n.API.RunSummary(ctx, id)
		if err != nil {
			return ""
		}
		return s.Status
	}
	waitStatus := func(id string, want event.RunStatus) {
		t.Helper()
		poll.Eventually(t, 60*time.Second, "run "+id+" "+string(want), func() bool { return status(id) == want })
	}
	// act posts the page's form for action and returns the status and the
	// page it lands on.
	act := func(c *http.Client, id, action string, extra url.Values) (int, string) {
		t.Helper()
		csrf, _ := dashCSRF(t, c, base+"/runs/"+id)
		form := url.Values{"csrf": {csrf}, "reason": {"from the page"}}
		for k, v := range extra {
			form[k] = v
		}
		resp, err := c.PostForm(base+"/runs/"+id+"/"+action, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	op := newDashClient()
	ot, err := trust.APIToken(n.Operator, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dashLogin(t, op, base, ot)
	poll.Eventually(t, 60*time.Second, "the step slow running", func() bool {
		r, err := n.API.RunsGet(ctx, run)
		return err == nil && r.Status == event.RunRunning && len(r.Steps) == 2 && r.Steps[0].Status == "running"
	})

	// A viewer sees no controls, and their forged pause is refused.
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := trust.NewIdentity(root, "vera", trust.KindOperator, []string{trust.ViewerRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := trust.APIToken(viewer, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	vc := newDashClient()
	dashLogin(t, vc, base, vt)
	if _, page := dashCSRF(t, vc, base+"/runs/"+run); strings.Contains(page, "/pause\"") {
		t.Fatal("a viewer's run page has a Pause control")
	}
	if code, body := act(vc, run, "pause", nil); code != http.StatusForbidden {
		t.Fatalf("a viewer's forged pause: %d %.500s", code, body)
	}
	if _, page := dashCSRF(t, op, base+"/runs/"+run); !strings.Contains(page, `action="/runs/`+run+`/pause"`) {
		t.Fatalf("the operator's page of a running run has no Pause:\n%.3000s", page)
	}

	if code, body := act(op, run, "pause", nil); code != http.StatusOK || !strings.Contains(body, "Recorded: pause") {
		t.Fatalf("the pause: %d %.500s", code, body)
	}
	waitStatus(run, event.RunPaused)
	poll.Eventually(t, 30*time.Second, "the step slow finished while paused", func() bool {
		r, err := n.API.RunsGet(ctx, run)
		return err == nil && r.Steps[0].Status == "succeeded"
	})
	settle(t, n)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the step after ran while the run was paused (%v)", err)
	}
	if s := status(run); s != event.RunPaused {
		t.Fatalf("run %s: %s, want still paused", run, s)
	}
	// Every action of an unfinished run is drawn; the ones its status
	// does not allow are hidden (the page's script shows them when it
	// changes).
	if _, page := dashCSRF(t, op, base+"/runs/"+run); !regexp.MustCompile(`action="/runs/`+run+`/resume" data-when="paused">`).MatchString(page) ||
		!regexp.MustCompile(`action="/runs/`+run+`/pause"[^>]* hidden>`).MatchString(page) {
		t.Fatal("the page of a paused run offers no Resume, or a Pause")
	}
	if code, body := act(op, run, "resume", nil); code != http.StatusOK || !strings.Contains(body, "Recorded: resume") {
		t.Fatalf("the resume: %d %.500s", code, body)
	}
	waitStatus(run, event.RunSucceeded)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the step after did not run once resumed: %v", err)
	}

	waitStatus(other, event.RunRunning)
	if code, _ := act(op, other, "cancel", nil); code != http.StatusBadRequest {
		t.Fatalf("an unconfirmed cancel: %d", code)
	}
	if code, body := act(op, other, "cancel", url.Values{"confirm": {"yes"}}); code != http.StatusOK || !strings.Contains(body, "Recorded: cancel") {
		t.Fatalf("the cancel: %d %.500s", code, body)
	}
	waitStatus(other, event.RunCancelled)

	want := map[event.Type]string{event.RunPausedFor: run, event.RunResumedFor: run, event.RunCancelRequestedFor: other}
	for l, err := range n.API.AuditLines(ctx, api.AuditRequest{Types: []string{string(event.RunPausedFor), string(event.RunResumedFor), string(event.RunCancelRequestedFor)}}) {
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ Operator, Reason string }
		if err := json.Unmarshal(l.Data, &d); err != nil || d.Operator != n.Operator.ID || d.Reason != "from the page" || l.Node != n.Config().Name || want[event.Type(l.Type)] != l.Run {
			t.Fatalf("%s of %s by %s: %s (%v)", l.Type, l.Run, l.Node, l.Data, err)
		}
		delete(want, event.Type(l.Type))
	}
	if len(want) > 0 {
		t.Fatalf("not in the ledger: %v", want)
	}
}
