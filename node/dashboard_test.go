package node_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestDashboardOnTheUINode: a node with the ui role serves the dashboard's
// pages beside the JSON API, read from its own ledger: a finished run's
// page draws its steps, a step's command is shown escaped, the audit links
// every event; GET /api/runs still answers JSON. Stopping the node ends a
// live stream a browser holds open.
func TestDashboardOnTheUINode(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(filepath.Join(t.TempDir(), "node")))
	run := submitGoal(t, n, "dash", "goal: dash\nsteps:\n  - id: first\n    run: \"echo '<script>alert(1)</script>'\"\n  - id: second\n    run: \"true\"\n    depends_on: [first]\n")
	if r := n.WaitRun(t, run, 60*time.Second); r.Status != "succeeded" {
		t.Fatalf("run %s: %s", run, r.Status)
	}
	base := "http://" + n.HTTPAddr()
	get := func(path string) (int, string, http.Header) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for path, want := range map[string]string{
		"/":                                 run[:12],
		"/runs/" + run:                      `data-node="second"`,
		"/runs/" + run + "/steps/first":     "&lt;script&gt;alert(1)&lt;/script&gt;",
		"/audit?run=" + run:                 "plan.accepted",
		"/nodes":                            "test-node",
		"/gates":                            "No gate is open",
		"/events/1":                         "Raw",
		"/audit?type=run.finished&node=zzz": "No event matches",
	} {
		code, body, h := get(path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want %q in:\n%.2000s", path, code, want, body)
		}
		if h.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s: the step's command reached the page unescaped", path)
		}
	}
	code, body, h := get("/api/runs")
	var page api.Page[api.RunSummary]
	if code != http.StatusOK || h.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &page) != nil || len(page.Items) != 1 {
		t.Fatalf("GET /api/runs: %d %q %s", code, h.Get("Content-Type"), body)
	}

	// A browser holds the run's live stream open; the node still stops.
	resp, err := http.Get(base + "/runs/" + run + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "id: ") {
		t.Fatalf("the live stream's first line %q (%v)", line, err)
	}
	start := time.Now()
	n.Stop(t)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("stopping took %s with a live stream open", d)
	}
}
