package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// Version names this planner's code and prompt in provenance.
const Version = "llm/1"

// Errors planning can end with, wrapped with what happened.
var (
	// ErrModel: the model server answered with an error status.
	ErrModel = errors.New("the model server refused the request")
	// ErrInvalidPlan: the model's answer, and its answer to the problems
	// sent back, were not a valid plan.
	ErrInvalidPlan = errors.New("the model did not give a valid plan")
	// ErrBudget: the run's token budget does not cover another call.
	ErrBudget = errors.New("the token budget is spent")
)

// Modes of a Source (Config.Mode).
const (
	// ModePlan plans the whole goal at once, replanning on failures.
	ModePlan = "plan"
	// ModeReact plans a step at a time from the observations so far
	// (open plans, event.Plan.Open).
	ModeReact = "react"
)

// Config configures a Source. The zero Config is usable.
type Config struct {
	// Mode is ModePlan ("" too) or ModeReact.
	Mode string
	// MaxTokens caps each answer (0: the server's default).
	MaxTokens int
	// Temperature and Seed are sent when set (a seed makes servers that
	// honour it repeatable).
	Temperature *float64
	Seed        *int64
	// Candidates is how many plans the model is asked for each time
	// (each with the seed + i when a seed is set): the best by its score
	// (candidates.go) is proposed, and every candidate is recorded in the
	// provenance. 0 or 1: one plan, no scoring.
	Candidates int
	// TokenBudget bounds the tokens (prompt and answer) planning one goal
	// may use, its replans included (PlanReplanRequestedData.Tokens); 0
	// means no bound. The policy's budgets.llm_tokens (Inputs) applies
	// when tighter.
	TokenBudget int
	// Inputs gives what the prompt tells beside the goal (policy,
	// capabilities, facts, notes); nil: the goal alone.
	Inputs func(ctx context.Context, goal event.GoalSubmittedData) Inputs
	// Build is the planner node's build version, recorded in every
	// plan's provenance (event.PlannerInfo.Build).
	Build string
}

// Source plans free-text goals with a model (roles/planner's Source, set
// as its Config.Text).
type Source struct {
	model Model
	cfg   Config
}

// NewSource returns a Source asking m.
func NewSource(m Model, cfg Config) *Source { return &Source{model: m, cfg: cfg} }

// Name is "llm", the proposal's source.
func (s *Source) Name() string { return "llm" }

// Plan returns the model's plan for goal; see PlanInfo.
func (s *Source) Plan(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error) {
	p, _, err := s.PlanInfo(ctx, run, goal)
	return p, err
}

// PlanInfo asks the model for a plan for goal and returns it with its
// provenance. An answer that fails the checks (no JSON, the schema,
// plan.Parse) is sent back once with the problems; the error of a second
// failure quotes them. The provenance is returned with errors too, as far
// as it got.
func (s *Source) PlanInfo(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, *event.PlannerInfo, error) {
	var in Inputs
	if s.cfg.Inputs != nil {
		in = s.cfg.Inputs(ctx, goal)
	}
	if s.cfg.Mode == ModeReact {
		p, _, info, err := s.choose(ctx, run, goal, reactMessages(goalText(goal), in, nil), 0, in, reactForm(nil, nil))
		return p, info, err
	}
	p, _, info, err := s.choose(ctx, run, goal, messages(goalText(goal), in), 0, in, planForm)
	return p, info, err
}

// budget is the token budget of one goal's planning: Config.TokenBudget,
// or the policy's budgets.llm_tokens when tighter (0: none).
func (s *Source) budget(in Inputs) int {
	budget := s.cfg.TokenBudget
	if in.Policy != nil && in.Policy.Budgets.LLMTokens > 0 && (budget == 0 || in.Policy.Budgets.LLMTokens < budget) {
		budget = in.Policy.Budgets.LLMTokens // the policy's budgets.llm_tokens, when tighter
	}
	return budget
}

// goalText is the words of a goal: its text, else its title.
func goalText(goal event.GoalSubmittedData) string {
	if goal.Text != "" {
		return goal.Text
	}
	return goal.Goal
}

// ask sends msgs and reads a plan out of the answer, sending the problems
// back once. It returns the plan with the answer's rationale. used is
// the tokens the run's planning used before (earlier revisions): they
// count against budget (0: none).
func (s *Source) ask(ctx context.Context, run string, goal event.GoalSubmittedData, msgs []Message, used, budget int, f form, seed *int64) (*event.Plan, string, *event.PlannerInfo, error) {
	info := &event.PlannerInfo{
		Model: s.model.Name(), Planner: cmp.Or(f.planner, Version), PromptSHA256: promptHash(msgs),
		Temperature: s.cfg.Temperature, Seed: s.cfg.Seed, MaxTokens: s.cfg.MaxTokens,
		Build: s.cfg.Build, Template: TemplateHash,
	}
	if budget > 0 && used >= budget {
		return nil, "", nil, fmt.Errorf("run %s: planning used %d tokens of a budget of %d before this revision: %w",
			run, used, budget, ErrBudget)
	}
	var problems error
	for attempt := 1; attempt <= 2; attempt++ {
		if attempt == 2 && budget > 0 && used+info.PromptTokens+info.CompletionTokens >= budget {
			return nil, "", info, fmt.Errorf("run %s: planning used %d tokens of a budget of %d, and the first answer was not a valid plan: %w\n%v",
				run, used+info.PromptTokens+info.CompletionTokens, budget, ErrBudget, problems)
		}
		start := time.Now()
		resp, err := s.model.Complete(ctx, Request{
			Messages: msgs, Schema: f.schema(), SchemaName: "agentic_plan",
			MaxTokens: s.cfg.MaxTokens, Temperature: s.cfg.Temperature, Seed: seed,
		})
		info.Latency += event.Duration(time.Since(start))
		if err != nil {
			return nil, "", info, fmt.Errorf("run %s: planning with model %s: %w", run, s.model.Name(), err)
		}
		info.ServedModel, info.Fingerprint = resp.Model, resp.Fingerprint
		info.PromptTokens += resp.PromptTokens
		info.CompletionTokens += resp.CompletionTokens
		info.Responses = append(info.Responses, resp.Text)
		if budget > 0 && used+info.PromptTokens+info.CompletionTokens > budget {
			return nil, "", info, fmt.Errorf("run %s: planning used %d tokens, over the budget of %d: %w",
				run, used+info.PromptTokens+info.CompletionTokens, budget, ErrBudget)
		}
		p, rationale, err := f.check(resp)
		if err == nil {
			if p.Goal == "" {
				p.Goal = goal.Goal
			}
			return p, rationale, info, nil
		}
		problems = err
		msgs = append(msgs,
			Message{Role: "assistant", Content: resp.Text},
			Message{Role: "user", Content: "That answer is not a valid plan:\n" + err.Error() +
				"\nAnswer again with the corrected plan: one JSON object, nothing else."})
	}
	return nil, "", info, fmt.Errorf("run %s: model %s, twice: %w:\n%v", run, s.model.Name(), ErrInvalidPlan, problems)
}

// form is what a model is asked to answer in: the response schema, and
// how a plan is read out of an answer.
type form struct {
	schema func() json.RawMessage
	check  func(Response) (*event.Plan, string, error)
	// planner names the code and prompt in provenance ("": Version).
	planner string
}

// planForm asks for a whole plan (the plan file format).
var planForm = form{schema: Schema, check: check}

// check reads a plan out of an answer: the JSON object, the schema, then
// plan.Parse's validation. Steps that do not say on_failure get
// "replan" (defaultOnFailure). The answer's "rationale" is taken out of
// the plan and returned.
func check(resp Response) (*event.Plan, string, error) {
	doc, err := Extract(resp.Text)
	if err != nil {
		if resp.FinishReason == "length" {
			return nil, "", fmt.Errorf("%w: the answer was cut at the token limit (planner.max_tokens)", err)
		}
		return nil, "", err
	}
	return checkPlanDoc(doc)
}

// checkPlanDoc checks a model's plan document — the schema, then the
// plan rules — and returns the plan with the defaults a model's plan gets
// (defaultOnFailure) and the rationale it gave.
func checkPlanDoc(doc []byte) (*event.Plan, string, error) {
	if err := CheckSchema(doc); err != nil {
		return nil, "", fmt.Errorf("the plan does not match the schema:\n%w", err)
	}
	doc, rationale, err := takeRationale(doc)
	if err != nil {
		return nil, "", err
	}
	p, err := plan.Parse("plan.json", doc)
	if err != nil {
		return nil, "", errors.New(strings.TrimSpace(err.Error()))
	}
	defaultOnFailure(doc, p)
	return p, rationale, nil
}
