// Package llm is the planner's model source: it asks a model served over
// the OpenAI-compatible chat-completions API (Ollama, vLLM, llama.cpp's
// server, hosted APIs) for a plan, checks the answer and returns it with
// its provenance.
//
// A plan is asked for in the plan file format of roles/planner/plan (flat
// or hierarchical JSON), with a JSON-schema response format. Servers may
// ignore the response format, so the answer is read defensively: the JSON
// object is taken out of a code fence or of chatter around it (Extract),
// checked against the schema (Schema) and then parsed and validated by
// plan.Parse — the same checks a plan file gets, cycles and unknown
// dependencies included. An answer that fails is sent back once with the
// problems, and the second answer must pass; otherwise planning fails with
// an error that quotes what was wrong (the run shows it).
//
// The model is reached through Model, a small interface of our own;
// OpenAI implements it with the official client (openai/openai-go). Tests
// use an httptest server speaking the chat-completions API.
//
// Invariants:
//
//  1. A plan this package returns passed plan.Parse: valid, normalized.
//  2. Every call's provenance (model asked and answered, prompt hash,
//     parameters, tokens, latency, the raw answers) is returned with the
//     plan or the error (Info), so that a proposal records what replay
//     needs without calling the model again.
//  3. At most two model calls per plan, and the tokens they used are
//     counted against Config.TokenBudget: a budget that cannot cover a
//     second call ends planning with ErrBudget rather than calling.
//
// Usage:
//
//	m := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5-coder"})
//	src := llm.NewSource(m, llm.Config{})
//	p, info, err := src.PlanInfo(ctx, run, goal)
package llm
