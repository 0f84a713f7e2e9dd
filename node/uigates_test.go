package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
)

// TestGateAnsweredThroughTheUI: the ui node lists the open gates over
// HTTP and answers one on behalf of the operator whose API token the
// request carries (gate.decided_for, signed by the node, naming the
// operator); without a token, or with a viewer's, nothing is recorded.
func TestGateAnsweredThroughTheUI(t *testing.T) {
	n, run, marker := gatedRun(t)
	ctx := context.Background()

	base := "http://" + n.HTTPAddr() + "/api/gates"
	var page api.Page[api.Gate]
	poll.Eventually(t, 30*time.Second, "the gate listed over HTTP", func() bool {
		resp, err := http.Get(base + "?run=" + run)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&page) == nil && len(page.Items) == 1
	})
	g := page.Items[0]
	post := func(token string, body any) (int, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base, bytes.NewReader(b))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	accept := map[string]any{"run": run, "step": "wipe", "subject": g.Subject, "action": "accept"}

	if code, body := post("", accept); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s", code, body)
	}
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
	if code, body := post(vt, accept); code != http.StatusForbidden {
		t.Fatalf("with a viewer's token: %d %s", code, body)
	}
	ot, err := trust.APIToken(n.Operator, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(ot, map[string]any{"run": run, "step": "wipe", "subject": g.Subject, "action": "deny"}); code != http.StatusBadRequest {
		t.Fatalf("a deny without a reason: %d %s", code, body)
	}
	// An answer naming a subject other than the gate's as the ui node
	// reads it (a stale page, a forged form) is refused: nothing emitted.
	stale := map[string]any{"run": run, "step": "wipe", "subject": "sha256:" + strings.Repeat("ab", 32), "action": "accept"}
	if code, body := post(ot, stale); code != http.StatusConflict || !strings.Contains(body, "another version") {
		t.Fatalf("an answer to another subject: %d %s", code, body)
	}
	if code, body := post(ot, map[string]any{"run": run, "step": "nowhere", "subject": g.Subject, "action": "accept"}); code != http.StatusNotFound {
		t.Fatalf("an answer to a step with no gate: %d %s", code, body)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the step ran before any approval (%v)", err)
	}
	code, body := post(ot, accept)
	if code != http.StatusAccepted {
		t.Fatalf("the operator's accept: %d %s", code, body)
	}
	waitFinished(t, n, []string{run})
	if s, err := n.API.RunSummary(ctx, run); err != nil || s.Status != event.RunSucceeded {
		t.Fatalf("run %s: %+v %v", run, s, err)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q (%v): want the step run once", b, err)
	}
	// The ledger holds the answer, signed by the node, naming the operator.
	found := false
	for l, err := range n.API.AuditLines(ctx, api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.GateDecidedFor) {
			var d event.GateDecidedForData
			if err := json.Unmarshal(l.Data, &d); err != nil || d.Operator != n.Operator.ID || l.Node != n.Config().Name {
				t.Fatalf("gate.decided_for %s by %s: %+v %v", l.Data, l.Node, d, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no gate.decided_for in the run's audit")
	}
}
