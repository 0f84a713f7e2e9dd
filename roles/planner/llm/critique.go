package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// CritiqueVersion names the critique's code and prompt in provenance.
const CritiqueVersion = "llm-critique/1"

// ErrInvalidVerdict: the model's answer, and its answer to the problems
// sent back, were not a verdict.
var ErrInvalidVerdict = errors.New("the model did not give a valid verdict")

// critiqueSchema is the response format asked for: a verdict and why.
var critiqueSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "verdict": {"enum": ["pass", "fail"]},
    "judgement": {"type": "string"}
  },
  "required": ["verdict", "judgement"],
  "additionalProperties": false
}`)

// critiqueSystem tells the model what a critique is and what to answer.
const critiqueSystem = `You review the result of one step of an automated plan run on a server.
You are given the run's goal, the step's command status and the end of its output, and the criteria the result must meet.
Judge only from what is shown: if the output does not show that the criteria are met, the verdict is "fail".
Answer with ONE JSON object and nothing else: {"verdict": "pass" or "fail", "judgement": "one to three sentences saying why"}.
` + dataRule

// Critique asks the model whether the output of req's target meets its
// criteria, and returns the verdict (pass or fail), the judgement and the
// provenance (Planner CritiqueVersion). An answer that is not a verdict
// is sent back once with the problem; the error of a second failure
// quotes it. The provenance is returned with errors too, as far as it got.
func (s *Source) Critique(ctx context.Context, run string, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
	msgs := []Message{{Role: "system", Content: critiqueSystem}, {Role: "user", Content: critiqueMessage(req)}}
	info := &event.PlannerInfo{
		Model: s.model.Name(), Planner: CritiqueVersion, PromptSHA256: promptHash(msgs),
		Temperature: s.cfg.Temperature, Seed: s.cfg.Seed, MaxTokens: s.cfg.MaxTokens,
		Build: s.cfg.Build, Template: TemplateHash,
	}
	var problem error
	for attempt := 1; attempt <= 2; attempt++ {
		start := time.Now()
		resp, err := s.model.Complete(ctx, Request{
			Messages: msgs, Schema: critiqueSchema, SchemaName: "agentic_critique",
			MaxTokens: s.cfg.MaxTokens, Temperature: s.cfg.Temperature, Seed: s.cfg.Seed,
		})
		info.Latency += event.Duration(time.Since(start))
		if err != nil {
			return "", "", info, fmt.Errorf("run %s: critique %s with model %s: %w", run, req.Step, s.model.Name(), err)
		}
		info.ServedModel, info.Fingerprint = resp.Model, resp.Fingerprint
		info.PromptTokens += resp.PromptTokens
		info.CompletionTokens += resp.CompletionTokens
		info.Responses = append(info.Responses, resp.Text)
		verdict, judgement, err := checkVerdict(resp)
		if err == nil {
			return verdict, judgement, info, nil
		}
		problem = err
		msgs = append(msgs,
			Message{Role: "assistant", Content: resp.Text},
			Message{Role: "user", Content: "That answer is not a verdict: " + err.Error() +
				"\nAnswer again: one JSON object {\"verdict\": \"pass\" or \"fail\", \"judgement\": \"why\"}, nothing else."})
	}
	return "", "", info, fmt.Errorf("run %s: critique %s: model %s, twice: %w: %v", run, req.Step, s.model.Name(), ErrInvalidVerdict, problem)
}

// critiqueMessage tells the model the goal, the target's end and output,
// and the criteria.
func critiqueMessage(req event.CritiqueRequestedData) string {
	var b strings.Builder
	if req.Goal != "" {
		fmt.Fprintf(&b, "Goal of the run: %s\n", req.Goal)
	}
	fmt.Fprintf(&b, "Step judged: %s\nIts status: %s\nIts exit code: %d\n", req.Target, orUnknown(string(req.TargetStatus)), req.ExitCode)
	if out := req.Output; out != "" {
		fmt.Fprintf(&b, "Its output (end):\n%s\n", fenced(outputEnd(out)))
	} else {
		b.WriteString("Its output: (none)\n")
	}
	fmt.Fprintf(&b, "\nCriteria the result must meet: %s\n", req.Criteria)
	return b.String()
}

// orUnknown is s, or "unknown" when empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// checkVerdict reads a verdict out of an answer: the JSON object (Extract,
// as for plans), a verdict pass or fail, a judgement that is not empty.
// Fields beyond those two are ignored.
func checkVerdict(resp Response) (event.CritiqueVerdict, string, error) {
	doc, err := Extract(resp.Text)
	if err != nil {
		if resp.FinishReason == "length" {
			return "", "", fmt.Errorf("%w: the answer was cut at the token limit (planner.max_tokens)", err)
		}
		return "", "", err
	}
	var v struct {
		Verdict   *string `json:"verdict"`
		Judgement *string `json:"judgement"`
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return "", "", fmt.Errorf("verdict and judgement must be strings: %w", err)
	}
	switch {
	case v.Verdict == nil:
		return "", "", errors.New(`the answer has no "verdict"`)
	case *v.Verdict != string(event.VerdictPass) && *v.Verdict != string(event.VerdictFail):
		return "", "", fmt.Errorf(`verdict is %q; it must be "pass" or "fail"`, *v.Verdict)
	case v.Judgement == nil || strings.TrimSpace(*v.Judgement) == "":
		return "", "", errors.New(`the answer has no "judgement": say why`)
	}
	return event.CritiqueVerdict(*v.Verdict), strings.TrimSpace(*v.Judgement), nil
}
