package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Message is one chat message.
type Message struct {
	// Role is system, user or assistant.
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion asked of a Model.
type Request struct {
	Messages []Message
	// Schema, when set, is asked for as the JSON-schema response format
	// named SchemaName.
	Schema     json.RawMessage
	SchemaName string
	// MaxTokens caps the answer (0: the server's default).
	MaxTokens int
	// Temperature and Seed are sent when set.
	Temperature *float64
	Seed        *int64
}

// Response is a model's answer.
type Response struct {
	// Text is the first choice's content.
	Text string
	// Model is the model the server says answered.
	Model string
	// Fingerprint is the server's system fingerprint, if it gives one.
	Fingerprint string
	// PromptTokens and CompletionTokens are the usage the server reports.
	PromptTokens     int
	CompletionTokens int
	// FinishReason is why the answer ended ("stop", "length").
	FinishReason string
}

// Model answers chat completions.
type Model interface {
	// Name is the model asked for.
	Name() string
	// Complete asks for one completion.
	Complete(ctx context.Context, req Request) (Response, error)
}

// OpenAIConfig configures NewOpenAI.
type OpenAIConfig struct {
	// BaseURL is the API's base URL, up to and including /v1.
	BaseURL string
	// Model is the model to ask for.
	Model string
	// APIKey is sent as a bearer token when set (Ollama and llama.cpp
	// need none).
	APIKey string
	// Timeout bounds one request (0: the context's deadline only).
	Timeout time.Duration
	// HTTPClient replaces the default client (tests, proxies).
	HTTPClient *http.Client
}

// OpenAI is a Model served over the OpenAI-compatible chat-completions
// API, reached with the official client.
type OpenAI struct {
	model  string
	client openai.Client
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI returns a Model for cfg. The client's own retries are off: a
// Source retries what it decides to retry, and counts it.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithMaxRetries(0)}
	// The client reads OPENAI_API_KEY when no key is given; an explicit
	// empty key keeps a key meant for another server from leaking here.
	opts = append(opts, option.WithAPIKey(cfg.APIKey))
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &OpenAI{model: cfg.Model, client: openai.NewClient(opts...)}
}

// Name is the model asked for.
func (o *OpenAI) Name() string { return o.model }

// Complete asks the server for one chat completion.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	params := openai.ChatCompletionNewParams{Model: o.model}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		}
	}
	if len(req.Schema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.Schema, &schema); err != nil {
			return Response{}, fmt.Errorf("llm: response schema: %w", err)
		}
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: req.SchemaName, Schema: schema,
			}},
		}
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.Seed != nil {
		params.Seed = openai.Int(*req.Seed)
	}
	c, err := o.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return Response{}, describe(err)
	}
	if len(c.Choices) == 0 {
		return Response{}, fmt.Errorf("llm: the server answered with no choices (model %s)", o.model)
	}
	return Response{
		Text:             c.Choices[0].Message.Content,
		Model:            c.Model,
		Fingerprint:      c.SystemFingerprint,
		PromptTokens:     int(c.Usage.PromptTokens),
		CompletionTokens: int(c.Usage.CompletionTokens),
		FinishReason:     string(c.Choices[0].FinishReason),
	}, nil
}

// describe turns the client's error into one that says what to check.
func describe(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		hint := ""
		switch {
		case apiErr.StatusCode == http.StatusNotFound:
			hint = " (is the model pulled, and does the base URL end in /v1?)"
		case apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden:
			hint = " (check planner.api_key_env)"
		case apiErr.StatusCode >= 500:
			hint = " (the model server failed; see its log)"
		}
		where := ""
		if apiErr.Request != nil {
			where = " " + apiErr.Request.Method + " " + apiErr.Request.URL.String()
		}
		return fmt.Errorf("llm:%s: status %d%s: %w", where, apiErr.StatusCode, hint, ErrModel)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("llm: no answer before the planning timeout: %w", err)
	}
	return fmt.Errorf("llm: %w (is the model server running at planner.base_url?)", err)
}
