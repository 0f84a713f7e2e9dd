package event

// PlannerInfo is the provenance of a plan a model proposed
// (PlanProposedData.Planner): what was asked, of which model, what it
// cost and what it answered — everything a replay needs without calling
// the model again. Protocol version 5 (absent in plans from files and in
// older events).
type PlannerInfo struct {
	// Model is the model asked for; ServedModel the one the server says
	// answered; Fingerprint the server's system fingerprint, if any.
	Model       string `json:"model"`
	ServedModel string `json:"served_model,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Planner names the planner's code and prompt version ("llm/1").
	Planner string `json:"planner"`
	// PromptSHA256 is the hex SHA-256 of the first request's messages.
	PromptSHA256 string `json:"prompt_sha256"`
	// Temperature, Seed and MaxTokens are the parameters sent, if any.
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	// PromptTokens and CompletionTokens add up every call's usage.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Latency adds up the calls' wall time.
	Latency Duration `json:"latency"`
	// Responses are the model's answers, in order (redacted at creation
	// like every payload); the last is the plan's. More than one means
	// the first failed the checks and was sent back with the problems.
	Responses []string `json:"responses"`
}
