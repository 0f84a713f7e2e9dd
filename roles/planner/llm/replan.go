package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// maxOutputTail caps the failed step's output the replan prompt quotes.
const maxOutputTail = 4 << 10

// outputEnd is the end of a step's output as a prompt quotes it: at most
// maxOutputTail bytes, cut at a character boundary, marked when cut.
func outputEnd(out string) string {
	if len(out) <= maxOutputTail {
		return out
	}
	i := len(out) - maxOutputTail
	for i < len(out) && !utf8.RuneStart(out[i]) {
		i++
	}
	return "..." + out[i:]
}

// Replan asks the model for the next revision of a running run's plan
// after a step failed (req: the goal, the plan in force, the steps done,
// the failure). The prompt is the first plan's, followed by the plan in
// force and the failure; the model is asked to keep the steps done (same
// id, same fields) and to say why it changes the plan ("rationale"). It
// returns the plan, the rationale and the provenance, as PlanInfo does.
func (s *Source) Replan(ctx context.Context, run string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error) {
	var in Inputs
	if s.cfg.Inputs != nil {
		in = s.cfg.Inputs(ctx, req.Goal)
	}
	if req.Reason == event.ReplanNext || s.cfg.Mode == ModeReact {
		return s.next(ctx, run, req, in)
	}
	msgs := messages(goalText(req.Goal), in)
	body, err := replanMessage(req)
	if err != nil {
		return nil, "", nil, fmt.Errorf("run %s: replan prompt: %w", run, err)
	}
	msgs = append(msgs, Message{Role: "user", Content: body})
	return s.choose(ctx, run, req.Goal, msgs, req.Tokens, in, planForm)
}

// replanMessage tells the model the plan in force, what succeeded and
// what failed, and what to answer.
func replanMessage(req event.PlanReplanRequestedData) (string, error) {
	cur, err := json.MarshalIndent(req.Plan, "", "  ")
	if err != nil {
		return "", fmt.Errorf("marshal plan revision %d: %w", req.Revision, err)
	}
	f := req.Failure
	var b strings.Builder
	fmt.Fprintf(&b, "Revision %d of the plan ran, and a step failed. The plan:\n%s\n\n", req.Revision, cur)
	if len(req.Done) > 0 {
		fmt.Fprintf(&b, "Steps done (they will not run again if the revised plan keeps them unchanged): %s\n", strings.Join(req.Done, ", "))
	} else {
		b.WriteString("No step is done yet.\n")
	}
	fmt.Fprintf(&b, "Failed step: %s (attempt %d)\n", f.Step, f.Attempt)
	if f.Command != "" {
		fmt.Fprintf(&b, "Command: %s\n", f.Command)
	}
	fmt.Fprintf(&b, "Exit code: %d\n", f.ExitCode)
	if f.Error != "" {
		fmt.Fprintf(&b, "Error: %s\n", f.Error)
	}
	if out := f.Output; out != "" {
		fmt.Fprintf(&b, "Output (end):\n%s\n", fenced(outputEnd(out)))
	}
	b.WriteString("\nAnswer with the revised plan, the whole of it, as ONE JSON object in the same format, " +
		"with a \"rationale\" field saying in a sentence or two what you changed and why. " +
		"Keep every step that is done exactly as it is (same id and fields); fix or replace the failed step " +
		"and the steps after it.")
	return b.String(), nil
}

// takeRationale removes the top-level "rationale" of a plan document,
// which plan.Parse does not know, and returns it. A document without one
// is returned as it is.
func takeRationale(doc []byte) ([]byte, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, "", fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	raw, ok := top["rationale"]
	if !ok {
		return doc, "", nil
	}
	var rationale string
	if err := json.Unmarshal(raw, &rationale); err != nil {
		return nil, "", fmt.Errorf("rationale: want a string: %w", err)
	}
	delete(top, "rationale")
	out, err := json.Marshal(top)
	if err != nil {
		return nil, "", fmt.Errorf("plan without its rationale: %w", err)
	}
	return out, strings.TrimSpace(rationale), nil
}

// defaultOnFailure gives on_failure "replan" to the steps of p that the
// answer doc left without one: a model's plan is replanned on a logic
// failure unless it says otherwise.
func defaultOnFailure(doc []byte, p *event.Plan) {
	type step struct {
		ID        string          `json:"id"`
		OnFailure json.RawMessage `json:"on_failure"`
	}
	var d struct {
		Steps    []step `json:"steps"`
		Subgoals []struct {
			Steps []step `json:"steps"`
		} `json:"subgoals"`
	}
	if json.NewDecoder(bytes.NewReader(doc)).Decode(&d) != nil {
		return
	}
	explicit := map[string]bool{}
	mark := func(steps []step) {
		for _, st := range steps {
			if len(st.OnFailure) > 0 {
				explicit[st.ID] = true
			}
		}
	}
	mark(d.Steps)
	for _, sg := range d.Subgoals {
		mark(sg.Steps)
	}
	for i := range p.Steps {
		if !explicit[p.Steps[i].ID] && !slices.ContainsFunc(p.Steps[i].Next, func(b event.Branch) bool { return b.On == event.BranchOnFailure }) {
			p.Steps[i].OnFailure = event.OnFailureReplan // a failure branch routes the failure itself
		}
	}
}
