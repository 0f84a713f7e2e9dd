package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// ReactVersion names the planner's code and prompt in provenance in
// ModeReact.
const ReactVersion = Version + "/react"

// reactRules follow the system prompt in ModeReact: they replace the
// answer format the prompt shows.
const reactRules = `

You plan a step at a time: you are shown what the steps so far did, and you give the next step (or the next few), or say the goal is done.
In this mode answer with ONE JSON object of this form, and nothing else:

{"rationale": "why these steps", "steps": [{"id": "look", "run": "ls -la /srv/app"}], "done": false}

- "steps" holds the NEW steps only, in the step format above; the steps so far stay as they are and are not repeated. A new step may depend on an earlier step by id; new ids must differ from the earlier ones.
- Prefer one step at a time whose output tells you what to do next; look (read-only commands) before you change anything.
- "done": true when the goal is reached, or cannot be: "steps" may then be empty, and steps given with it are the last.
- No subgoals in this mode.`

// next asks the model for the next revision of an open plan: the steps
// to add after the steps so far (req.Plan), from their results, or the
// word that the goal is done. A failure replan in ModeReact (a step with
// on_failure replan failed) is asked the same way: the steps done stay,
// and the model gives what replaces the rest.
func (s *Source) next(ctx context.Context, run string, req event.PlanReplanRequestedData, in Inputs) (*event.Plan, string, *event.PlannerInfo, error) {
	kept := req.Plan.Steps
	if req.Reason != event.ReplanNext {
		kept = nil
		for _, st := range req.Plan.Steps {
			if slices.Contains(req.Done, st.ID) {
				kept = append(kept, st)
			}
		}
	}
	f := reactForm(kept, req.Plan.Subgoals)
	return s.choose(ctx, run, req.Goal, reactMessages(goalText(req.Goal), in, &req), req.Tokens, in, f)
}

// reactMessages is the prompt of ModeReact: the first plan's prompt with
// reactRules, and for a revision after the first (req) the steps so far
// with their results, and the failure that asked for it if one did.
func reactMessages(goal string, in Inputs, req *event.PlanReplanRequestedData) []Message {
	msgs := messages(goal, in)
	msgs[0].Content += reactRules
	var b strings.Builder
	if req == nil {
		b.WriteString("No step has run yet. Answer with the first step (or first few).")
		msgs[1].Content += "\n" + b.String()
		return msgs
	}
	results := map[string]event.StepResult{}
	for _, r := range req.Results {
		results[r.Step] = r
	}
	fmt.Fprintf(&b, "The steps so far (plan revision %d):\n", req.Revision)
	for _, st := range req.Plan.Steps {
		fmt.Fprintf(&b, "- %s: %s\n", st.ID, command(st))
		r, ok := results[st.ID]
		switch {
		case ok:
			fmt.Fprintf(&b, "  %s, exit code %d", r.Status, r.ExitCode)
			if r.Reason != "" {
				fmt.Fprintf(&b, " (%s)", r.Reason)
			}
			b.WriteString("\n")
			if out := strings.TrimRight(r.OutputTail, "\n"); out != "" {
				fmt.Fprintf(&b, "  output (end):\n%s\n", indent(fenced(outputEnd(out)), "    "))
			}
		case slices.Contains(req.Done, st.ID):
			b.WriteString("  done\n")
		default:
			b.WriteString("  did not run\n")
		}
	}
	if req.Reason != event.ReplanNext {
		f := req.Failure
		fmt.Fprintf(&b, "\nStep %s failed (attempt %d, exit code %d)", f.Step, f.Attempt, f.ExitCode)
		if f.Error != "" {
			fmt.Fprintf(&b, ": %s", f.Error)
		}
		b.WriteString("\n")
		if out := strings.TrimRight(f.Output, "\n"); out != "" {
			out = outputEnd(out)
			fmt.Fprintf(&b, "Its output (end):\n%s\n", indent(out, "    "))
		}
		b.WriteString("The steps done stay; the failed step and the steps that did not run are dropped: give what replaces them, under new ids or the same.\n")
	}
	b.WriteString("\nAnswer with the next step (or next few) as new steps, or with \"done\": true.")
	msgs = append(msgs, Message{Role: "user", Content: b.String()})
	return msgs
}

// indent prefixes every line of s with p.
func indent(s, p string) string { return p + strings.ReplaceAll(s, "\n", "\n"+p) }

// command is what a step runs, for the prompt.
func command(st event.Step) string {
	switch st.Kind {
	case event.KindShell, "":
		return st.Run
	case event.KindFileWrite, event.KindFilePatch:
		return string(st.Kind) + " " + st.Path
	}
	return string(st.Kind)
}

// reactSchema is the plan schema with "done", the response schema of
// ModeReact.
var reactSchema = func() json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(planSchema, &s); err != nil {
		panic(fmt.Sprintf("llm: plan schema: %v", err))
	}
	props, _ := s["properties"].(map[string]any)
	props["done"] = map[string]any{"type": "boolean"}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("llm: react schema: %v", err))
	}
	return b
}()

// reactForm reads a ModeReact answer into the next revision: the steps
// kept (exactly as they are, subgoals too) followed by the answer's new
// steps, open unless the answer says done. The answer is checked as a
// plan in which the kept steps stand (so that new steps may depend on
// them); a step that repeats a kept step's id is taken for the kept step.
func reactForm(kept []event.Step, subgoals []event.Subgoal) form {
	check := func(resp Response) (*event.Plan, string, error) {
		doc, err := Extract(resp.Text)
		if err != nil {
			if resp.FinishReason == "length" {
				return nil, "", fmt.Errorf("%w: the answer was cut at the token limit (planner.max_tokens)", err)
			}
			return nil, "", err
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(doc, &top); err != nil {
			return nil, "", fmt.Errorf("the answer is not a JSON object: %w", err)
		}
		done := false
		if raw, ok := top["done"]; ok {
			if err := json.Unmarshal(raw, &done); err != nil {
				return nil, "", fmt.Errorf("done: want true or false: %w", err)
			}
			delete(top, "done")
		}
		if _, ok := top["subgoals"]; ok {
			return nil, "", errors.New(`answer with "steps", not "subgoals": steps are planned a few at a time`)
		}
		var steps []json.RawMessage
		if raw, ok := top["steps"]; ok {
			if err := json.Unmarshal(raw, &steps); err != nil {
				return nil, "", fmt.Errorf("steps: want an array of steps: %w", err)
			}
		}
		ids := map[string]bool{}
		all := make([]json.RawMessage, 0, len(kept)+len(steps))
		for _, st := range kept {
			ids[st.ID] = true
			stub, _ := json.Marshal(map[string]string{"id": st.ID, "kind": "noop"}) // plain strings
			all = append(all, stub)
		}
		added := 0
		for _, raw := range steps {
			var st struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(raw, &st) == nil && ids[st.ID] {
				continue // a kept step repeated
			}
			all = append(all, raw)
			added++
		}
		if added == 0 && !done {
			return nil, "", errors.New(`the answer adds no step and does not say "done": true: give the next step, or "done": true`)
		}
		if len(all) == 0 {
			return nil, "", errors.New(`the first answer must give a step, even with "done": true`)
		}
		top["steps"], _ = json.Marshal(all) // raw messages
		doc, _ = json.Marshal(top)
		p, rationale, err := checkPlanDoc(doc)
		if err != nil {
			return nil, "", err
		}
		out := &event.Plan{Goal: p.Goal, Subgoals: subgoals, Open: !done, Steps: slices.Clone(kept)}
		for _, st := range p.Steps {
			if !ids[st.ID] {
				out.Steps = append(out.Steps, st)
			}
		}
		return out, rationale, nil
	}
	return form{schema: func() json.RawMessage { return slices.Clone(reactSchema) }, check: check, planner: ReactVersion}
}
