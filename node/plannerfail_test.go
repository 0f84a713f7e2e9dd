package node_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// TestModelFailuresShowInRunShow: against a chat-completions server that
// answers 500, one that does not answer within planner.timeout, a model
// that plans a cycle twice, and a planning over planner.token_budget,
// the run fails, and its view (run show) says why in words.
func TestModelFailuresShowInRunShow(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	for _, tc := range []struct {
		name    string
		server  func(t *testing.T) *httptest.Server
		timeout time.Duration
		budget  int
		says    []string
	}{
		{name: "500", server: func(t *testing.T) *httptest.Server {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, `{"error": {"message": "the model crashed"}}`, http.StatusInternalServerError)
			}))
			t.Cleanup(srv.Close)
			return srv
		}, says: []string{"500"}},
		{name: "timeout", server: func(t *testing.T) *httptest.Server {
			srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // read it all: then a client gone cancels r.Context()
				select {
				case <-r.Context().Done():
				case <-stuck:
				}
			}))
			t.Cleanup(srv.Close)
			return srv
		}, timeout: 300 * time.Millisecond, says: []string{"timed out after 300ms"}},
		{name: "cycle", server: func(t *testing.T) *httptest.Server {
			return modelServer(t, `{"steps": [{"id": "a", "run": "echo a", "depends_on": ["b"]}, {"id": "b", "run": "echo b", "depends_on": ["a"]}]}`)
		}, says: []string{"cycle", "test-model"}},
		{name: "token budget", server: func(t *testing.T) *httptest.Server {
			return modelServer(t, "not a plan")
		}, budget: llmtest.PromptTokens + llmtest.CompletionTokens + 10, says: []string{"budget"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.server(t)
			cfg := nodetest.Config(t.TempDir())
			cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
			if tc.timeout > 0 {
				cfg.Planner.Timeout = tc.timeout
			}
			cfg.Planner.TokenBudget = tc.budget
			n := nodetest.Start(t, cfg)
			r := n.WaitRun(t, submitText(t, n, "do something"), 60*time.Second)
			if r.Status != event.RunFailed || r.Code != "plan_rejected" {
				t.Fatalf("run %s: %s [%s] (%s)", r.ID, r.Status, r.Code, r.Reason)
			}
			for _, want := range tc.says {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("run show says %q; want it to say %q", r.Reason, want)
				}
			}
		})
	}
}
