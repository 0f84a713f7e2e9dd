package node_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestDashboardFollowsStepOutput: a step's panel on the ui node follows
// the step's output from the logs stream while it runs — what it wrote
// before the panel opened, then what it writes later — redacted as all
// output is.
func TestDashboardFollowsStepOutput(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(filepath.Join(dir, "node")))
	marker := filepath.Join(dir, "go-on")
	run := submitGoal(t, n, "talk", "goal: talk\nsteps:\n  - id: talk\n    run: \"echo first; echo token $(printf 'gh%s_%s%s' p Ab3dE5fG7hI9jK1lM3n O5pQ7rS9tU1vW3xY5); until [ -e "+
		marker+" ]; do sleep 0.1; done; echo second\"\n")
	poll.Eventually(t, 30*time.Second, "the run in the ui node's index", func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/api/runs/" + run)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTPAddr()+"/runs/"+run+"/steps/talk/output", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("output stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var seen strings.Builder
	readUntil := func(want string) {
		t.Helper()
		for !strings.Contains(seen.String(), want) {
			if !sc.Scan() {
				t.Fatalf("the stream ended before %q (%v); it sent:\n%s", want, sc.Err(), seen.String())
			}
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				seen.WriteString(line + "\n")
			}
		}
	}
	readUntil("first")
	if strings.Contains(seen.String(), "second") {
		t.Fatal("second before the step was let go on")
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readUntil("second")
	if strings.Contains(seen.String(), "ghp_Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5") {
		t.Fatalf("the token reached the page unredacted:\n%s", seen.String())
	}
	if r := n.WaitRun(t, run, 60*time.Second); r.Status != "succeeded" {
		t.Fatalf("run %s: %s", run, r.Status)
	}
}
