package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// chatServer is an httptest server speaking the chat-completions API: it
// answers the Nth request with answers[N] (the last one again after
// that), and keeps every request body.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []answer
	requests []map[string]any
}

type answer struct {
	status int           // 0: 200
	text   string        // the content
	usage  [2]int        // prompt, completion tokens
	delay  time.Duration // before answering
	finish string        // finish_reason; "" = stop
}

func newChatServer(t *testing.T, answers ...answer) *chatServer {
	t.Helper()
	cs := &chatServer{answers: answers}
	cs.Server = httptest.NewServer(http.HandlerFunc(cs.serve))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	cs.mu.Lock()
	n := len(cs.requests)
	cs.requests = append(cs.requests, req)
	a := cs.answers[min(n, len(cs.answers)-1)]
	cs.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.status != 0 {
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		return
	}
	finish := a.finish
	if finish == "" {
		finish = "stop"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1763800000, "model": "served-model:7b",
		"system_fingerprint": "fp_test",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": a.text}}},
		"usage": map[string]any{"prompt_tokens": a.usage[0], "completion_tokens": a.usage[1], "total_tokens": a.usage[0] + a.usage[1]},
	})
}

func (cs *chatServer) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.requests)
}

func (cs *chatServer) request(i int) map[string]any {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.requests[i]
}

func source(cs *chatServer, cfg Config) *Source {
	return NewSource(NewOpenAI(OpenAIConfig{BaseURL: cs.URL + "/v1", Model: "test-model"}), cfg)
}

var goal = event.GoalSubmittedData{Goal: "Serve /srv/www on port 8080", Text: "Serve /srv/www on port 8080"}

const validPlan = `{"goal": "serve", "steps": [
  {"id": "install", "run": "apt-get install -y nginx"},
  {"id": "start", "run": "systemctl start nginx", "depends_on": ["install"]}]}`

func TestPlanFromModel(t *testing.T) {
	seed := int64(7)
	temp := 0.2
	for _, tc := range []struct{ name, text string }{
		{"plain", validPlan},
		{"code fence", "Here is the plan:\n```json\n" + validPlan + "\n```\nGood luck!"},
		{"chatter", "Sure! " + validPlan + " Let me know if you need more."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, answer{text: tc.text, usage: [2]int{120, 40}})
			p, info, err := source(cs, Config{Seed: &seed, Temperature: &temp, MaxTokens: 2000}).PlanInfo(context.Background(), "run-1", goal)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != 2 || p.Steps[1].ID != "start" || p.Steps[1].DependsOn[0] != "install" {
				t.Fatalf("plan = %+v", p.Steps)
			}
			if info.ServedModel != "served-model:7b" || info.Model != "test-model" || info.PromptTokens != 120 ||
				info.CompletionTokens != 40 || len(info.Responses) != 1 || info.Responses[0] != tc.text ||
				info.Fingerprint != "fp_test" || len(info.PromptSHA256) != 64 || info.Planner != Version {
				t.Fatalf("info = %+v", info)
			}
			req := cs.request(0)
			rf, _ := req["response_format"].(map[string]any)
			if rf["type"] != "json_schema" || req["seed"] != float64(7) || req["temperature"] != 0.2 || req["model"] != "test-model" {
				t.Fatalf("request = %v", req)
			}
		})
	}
}

func TestInvalidThenValidOnRetry(t *testing.T) {
	cs := newChatServer(t,
		answer{text: `{"steps": [{"id": "a", "run": "true", "depends_on": ["b"]}, {"id": "b", "run": "true", "depends_on": ["a"]}]}`, usage: [2]int{100, 30}},
		answer{text: validPlan, usage: [2]int{180, 40}})
	p, info, err := source(cs, Config{}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 2 || cs.count() != 2 || len(info.Responses) != 2 || info.PromptTokens != 280 {
		t.Fatalf("steps %d, calls %d, info %+v", len(p.Steps), cs.count(), info)
	}
	// The second request carried the first answer and its problem.
	msgs, _ := cs.request(1)["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if len(msgs) != 4 || !strings.Contains(last["content"].(string), "cycle") {
		t.Fatalf("retry messages = %v", msgs)
	}
}

func TestPlanningFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []answer
		cfg     Config
		timeout time.Duration
		want    error
		says    string
		calls   int
	}{
		{name: "cycle twice", answers: []answer{{text: `{"steps": [{"id": "a", "run": "x", "depends_on": ["b"]}, {"id": "b", "run": "x", "depends_on": ["a"]}]}`}},
			want: ErrInvalidPlan, says: "cycle", calls: 2},
		{name: "no json twice", answers: []answer{{text: "I cannot help with that."}},
			want: ErrInvalidPlan, says: "no JSON object", calls: 2},
		{name: "schema", answers: []answer{{text: `{"steps": [{"id": "a", "run": "x", "sudo": true}]}`}},
			want: ErrInvalidPlan, says: "schema", calls: 2},
		{name: "cut at the token limit", answers: []answer{{text: `{"steps": [{"id": "a", "ru`, finish: "length"}},
			want: ErrInvalidPlan, says: "planner.max_tokens", calls: 2},
		{name: "server error", answers: []answer{{status: 500}}, want: ErrModel, says: "status 500", calls: 1},
		{name: "timeout", answers: []answer{{delay: 5 * time.Second}}, timeout: 200 * time.Millisecond,
			want: context.DeadlineExceeded, says: "planning timeout", calls: 1},
		{name: "budget", answers: []answer{{text: "nope", usage: [2]int{900, 200}}}, cfg: Config{TokenBudget: 1000},
			want: ErrBudget, says: "budget of 1000", calls: 1},
		{name: "the policy's budget", answers: []answer{{text: "nope", usage: [2]int{400, 200}}}, cfg: Config{TokenBudget: 100000,
			Inputs: func(context.Context, event.GoalSubmittedData) Inputs { return Inputs{Policy: budgetPolicy(500)} }},
			want: ErrBudget, says: "budget of 500", calls: 1},
		{name: "budget before retry", answers: []answer{{text: "nope", usage: [2]int{500, 100}}}, cfg: Config{TokenBudget: 600},
			want: ErrBudget, says: "no JSON object", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, tc.answers...)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			p, info, err := source(cs, tc.cfg).PlanInfo(ctx, "run-1", goal)
			if p != nil || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("plan %v, err %v; want %v saying %q", p, err, tc.want, tc.says)
			}
			if cs.count() != tc.calls || info == nil {
				t.Fatalf("%d calls, want %d; info %+v", cs.count(), tc.calls, info)
			}
		})
	}
}

func TestPromptCarriesPolicyAndNotes(t *testing.T) {
	cs := newChatServer(t, answer{text: validPlan})
	pol, err := policy.Parse([]byte("rules:\n  - {pattern: \"rm -rf\", level: high, require_confirmation: true}\n  - {pattern: \"mkfs\", level: critical, action: deny}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Inputs: func(context.Context, event.GoalSubmittedData) Inputs {
		return Inputs{Policy: pol, Capabilities: []string{"docker"},
			Notes: []string{"apt-get install without -y failed 4 of 5 times"}}
	}}
	if _, _, err := source(cs, cfg).PlanInfo(context.Background(), "run-1", goal); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cs.request(0)["messages"])
	for _, want := range []string{`\"rm -rf\" needs an operator's approval`, `\"mkfs\" is denied`, "docker", "failed 4 of 5 times", "Serve /srv/www"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("prompt lacks %q:\n%s", want, b)
		}
	}
}

func TestExtract(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"```\n{\"a\": 1}\n```", `{"a": 1}`},
		{"```yaml\nnot: json\n```\nthen {\"a\": \"}{\"}", `{"a": "}{"}`},
		{`text {broken then {"a": {"b": 2}} tail`, `{"a": {"b": 2}}`},
	} {
		got, err := Extract(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("Extract(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := Extract("no object here [1, 2]"); !errors.Is(err, ErrNoJSON) {
		t.Fatalf("err = %v", err)
	}
}

// budgetPolicy is a policy whose budgets.llm_tokens is n.
func budgetPolicy(n int) *policy.Policy {
	p, err := policy.Parse([]byte(fmt.Sprintf("default: allow\nbudgets: {llm_tokens: %d}\n", n)), "budget.yaml")
	if err != nil {
		panic(err)
	}
	return p
}
