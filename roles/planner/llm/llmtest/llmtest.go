// Package llmtest is the test kit of the planner's model: an httptest
// server speaking the OpenAI chat-completions API — the only stand-in the
// project's tests use, for the model — whose answers a test writes.
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Usage is what every answer of Server reports spending.
const (
	PromptTokens     = 300
	CompletionTokens = 60
	// Model is the model the server says answered.
	Model = "served:1"
)

// Server starts a chat-completions server, closed at the end of the test,
// that answers each request with answer(prompt): prompt is the request's
// messages' contents, one per line. Its base URL for a client is URL+"/v1".
func Server(t testing.TB, answer func(prompt string) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Content + "\n")
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1763800000, "model": Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer(prompt.String())}}},
			"usage": map[string]any{"prompt_tokens": PromptTokens, "completion_tokens": CompletionTokens,
				"total_tokens": PromptTokens + CompletionTokens},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}
