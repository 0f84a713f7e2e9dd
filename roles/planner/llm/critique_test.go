package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner"
)

var _ planner.CritiqueSource = (*Source)(nil)

var critiqueReq = event.CritiqueRequestedData{Step: "review", Attempt: 1, Target: "serve",
	Criteria: "the page answers 200", Goal: "Serve /srv/www on port 8080",
	TargetStatus: event.StepSucceeded, Output: "HTTP/1.1 200 OK\n<title>www</title>\n"}

func TestCritiqueVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       event.CritiqueVerdict
		judgement  string
	}{
		{"pass", `{"verdict": "pass", "judgement": "It answers 200."}`, event.VerdictPass, "It answers 200."},
		{"fail", `{"verdict": "fail", "judgement": " The title is missing. "}`, event.VerdictFail, "The title is missing."},
		{"fenced", "Here:\n```json\n{\"verdict\": \"pass\", \"judgement\": \"ok\"}\n```", event.VerdictPass, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, answer{text: tc.text, usage: [2]int{90, 20}})
			v, j, info, err := source(cs, Config{}).Critique(context.Background(), "run-1", critiqueReq)
			if err != nil || v != tc.want || j != tc.judgement {
				t.Fatalf("Critique = %q, %q, %v; want %q, %q", v, j, err, tc.want, tc.judgement)
			}
			if info.Planner != CritiqueVersion || info.Model != "test-model" || info.ServedModel != "served-model:7b" ||
				info.PromptTokens != 90 || info.CompletionTokens != 20 || len(info.PromptSHA256) != 64 ||
				len(info.Responses) != 1 || info.Responses[0] != tc.text || info.Latency <= 0 {
				t.Fatalf("info = %+v", info)
			}
			req := cs.request(0)
			rf, _ := req["response_format"].(map[string]any)
			js, _ := rf["json_schema"].(map[string]any)
			if rf["type"] != "json_schema" || js["name"] != "agentic_critique" {
				t.Fatalf("response_format = %v", rf)
			}
			msgs, _ := req["messages"].([]any)
			prompt := ""
			for _, m := range msgs {
				prompt += m.(map[string]any)["content"].(string)
			}
			for _, want := range []string{"the page answers 200", "<title>www</title>", "Serve /srv/www", "Step judged: serve", "status: succeeded"} {
				if !strings.Contains(prompt, want) {
					t.Errorf("prompt lacks %q:\n%s", want, prompt)
				}
			}
		})
	}
}

func TestCritiqueInvalidThenValid(t *testing.T) {
	cs := newChatServer(t,
		answer{text: `{"verdict": "maybe", "judgement": "hard to say"}`, usage: [2]int{90, 20}},
		answer{text: `{"verdict": "fail", "judgement": "No title."}`, usage: [2]int{130, 20}})
	v, j, info, err := source(cs, Config{}).Critique(context.Background(), "run-1", critiqueReq)
	if err != nil || v != event.VerdictFail || j != "No title." {
		t.Fatalf("Critique = %q, %q, %v", v, j, err)
	}
	if cs.count() != 2 || len(info.Responses) != 2 || info.PromptTokens != 220 {
		t.Fatalf("calls %d, info %+v", cs.count(), info)
	}
	msgs, _ := cs.request(1)["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if len(msgs) != 4 || !strings.Contains(last["content"].(string), `verdict is "maybe"`) {
		t.Fatalf("retry messages = %v", msgs)
	}
}

func TestCritiqueFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []answer
		timeout time.Duration
		want    error
		says    string
		calls   int
	}{
		{name: "no verdict twice", answers: []answer{{text: "Looks fine to me."}}, want: ErrInvalidVerdict, says: "no JSON object", calls: 2},
		{name: "no judgement twice", answers: []answer{{text: `{"verdict": "pass"}`}}, want: ErrInvalidVerdict, says: "no \"judgement\"", calls: 2},
		{name: "server error", answers: []answer{{status: 500}}, want: ErrModel, says: "status 500", calls: 1},
		{name: "timeout", answers: []answer{{delay: 5 * time.Second}}, timeout: 200 * time.Millisecond,
			want: context.DeadlineExceeded, says: "planning timeout", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, tc.answers...)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			v, _, info, err := source(cs, Config{}).Critique(ctx, "run-1", critiqueReq)
			if v != "" || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("verdict %q, err %v; want %v saying %q", v, err, tc.want, tc.says)
			}
			if cs.count() != tc.calls || info == nil || info.Planner != CritiqueVersion {
				t.Fatalf("%d calls, want %d; info %+v", cs.count(), tc.calls, info)
			}
		})
	}
}
