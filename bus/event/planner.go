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
	// Candidates are the plans the model was asked for when the planner
	// asks for more than one (planner.candidates), in the order asked,
	// with their scores; the chosen one is the plan. Scoring names the
	// formula and its version. Protocol version 6.
	Candidates []Candidate `json:"candidates,omitempty"`
	Scoring    string      `json:"scoring,omitempty"`
	// Build is the planner node's build version (agentd's version), and
	// Template the hex SHA-256 (first 16 digits) of the planner's prompt
	// template, the fixed text every prompt starts from: together the
	// telemetry export's planner_version. Protocol version 8; absent
	// before.
	Build    string `json:"build,omitempty"`
	Template string `json:"template,omitempty"`
}

// Candidate is one of the plans a model was asked for, and its score
// (PlannerInfo.Scoring says how it is computed; lowest wins). Protocol
// version 6.
type Candidate struct {
	// Response is the index in PlannerInfo.Responses of the candidate's
	// last answer; Seed the seed it was asked with, if any.
	Response int    `json:"response"`
	Seed     *int64 `json:"seed,omitempty"`
	// Score is the candidate's score; Risk the steps the policy would
	// gate, Denied those it would deny (a denied step disqualifies),
	// Steps the step count, History the failures its commands are
	// expected to have by their history.
	Score   float64 `json:"score"`
	Risk    int     `json:"risk"`
	Denied  int     `json:"denied,omitempty"`
	Steps   int     `json:"steps"`
	History float64 `json:"history"`
	// Error says why the candidate is no plan (it failed the checks
	// twice); such a candidate has no score and is never chosen.
	Error string `json:"error,omitempty"`
	// Chosen marks the candidate proposed.
	Chosen bool `json:"chosen,omitempty"`
}
