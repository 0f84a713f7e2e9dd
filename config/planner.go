package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultPlannerBaseURL is Ollama's OpenAI-compatible API on this machine.
const DefaultPlannerBaseURL = "http://127.0.0.1:11434/v1"

// PlannerConfig configures the planner role's model: any server speaking
// the OpenAI chat-completions API (Ollama, vLLM, llama.cpp's server,
// hosted APIs). Without a Model, free-text goals are refused with a hint
// and plan files still work.
type PlannerConfig struct {
	// BaseURL is the API's base URL, up to and including /v1.
	BaseURL string `yaml:"base_url"`
	// Model is the model to ask for ("qwen2.5-coder:7b"); empty: no model.
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key (the
	// key itself never sits in a file); empty: none is sent.
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout bounds planning one goal, model calls included.
	Timeout time.Duration `yaml:"timeout"`
	// ClaimTimeout is how long a goal may wait for a planner that can
	// plan it; then the run is rejected with code no_planner.
	ClaimTimeout time.Duration `yaml:"claim_timeout"`
	// MaxTokens caps each answer.
	MaxTokens int `yaml:"max_tokens"`
	// TokenBudget bounds the tokens planning one goal may use (0: none).
	TokenBudget int `yaml:"token_budget"`
	// Temperature and Seed are sent when set.
	Temperature *float64 `yaml:"temperature"`
	Seed        *int64   `yaml:"seed"`
	// Mode is how goals are planned: PlannerModePlan (the whole plan at
	// once, replanned on failures) or PlannerModeReact (a step at a time
	// from the observations so far).
	Mode string `yaml:"mode"`
	// Candidates is how many plans the model is asked for, each time it
	// plans: the best by a recorded score is proposed (1: one plan, no
	// scoring).
	Candidates int `yaml:"candidates"`
}

// Planner modes (planner.mode).
const (
	PlannerModePlan  = "plan"
	PlannerModeReact = "react"
)

// MaxPlannerCandidates bounds planner.candidates.
const MaxPlannerCandidates = 8

// DefaultPlannerTimeout bounds planning one goal.
const DefaultPlannerTimeout = 2 * time.Minute

// DefaultClaimTimeout is how long a goal waits for a planner that can plan
// it.
const DefaultClaimTimeout = 30 * time.Second

// DefaultPlannerMaxTokens caps a model's answer: a plan of about a hundred
// steps.
const DefaultPlannerMaxTokens = 8192

func defaultPlanner() PlannerConfig {
	return PlannerConfig{BaseURL: DefaultPlannerBaseURL, Timeout: DefaultPlannerTimeout, MaxTokens: DefaultPlannerMaxTokens, ClaimTimeout: DefaultClaimTimeout,
		Mode: PlannerModePlan, Candidates: 1}
}

// plannerSettings are the planner's keys, env variables and flags.
var plannerSettings = []setting{
	str("planner.base_url", "planner-base-url", "AGENTIC_PLANNER_BASE_URL", "OpenAI-compatible API of the planner's model, up to /v1 (Ollama's by default)", func(c *Config) *string { return &c.Planner.BaseURL }),
	str("planner.model", "planner-model", "AGENTIC_PLANNER_MODEL", "model that plans free-text goals (empty: only plan files)", func(c *Config) *string { return &c.Planner.Model }),
	str("planner.api_key_env", "planner-api-key-env", "AGENTIC_PLANNER_API_KEY_ENV", "environment variable that holds the model API's key (empty: none)", func(c *Config) *string { return &c.Planner.APIKeyEnv }),
	duration("planner.timeout", "planner-timeout", "AGENTIC_PLANNER_TIMEOUT", "time to plan one goal, model calls included", func(c *Config) *time.Duration { return &c.Planner.Timeout }),
	duration("planner.claim_timeout", "planner-claim-timeout", "AGENTIC_PLANNER_CLAIM_TIMEOUT", "deprecated and ignored: the claim timeout is the cluster setting planning.claim_timeout (agentctl cluster settings set --claim-timeout)", func(c *Config) *time.Duration { return &c.Planner.ClaimTimeout }),
	integer("planner.max_tokens", "planner-max-tokens", "AGENTIC_PLANNER_MAX_TOKENS", "longest answer asked of the model, in tokens", func(c *Config) *int { return &c.Planner.MaxTokens }),
	integer("planner.token_budget", "planner-token-budget", "AGENTIC_PLANNER_TOKEN_BUDGET", "tokens planning one goal may use, prompts included (0: no bound)", func(c *Config) *int { return &c.Planner.TokenBudget }),
	str("planner.mode", "planner-mode", "AGENTIC_PLANNER_MODE", "plan (the whole plan at once) or react (a step at a time from the observations so far)", func(c *Config) *string { return &c.Planner.Mode }),
	integer("planner.candidates", "planner-candidates", "AGENTIC_PLANNER_CANDIDATES", "plans asked of the model each time, the best by a recorded score proposed (1: no scoring)", func(c *Config) *int { return &c.Planner.Candidates }),
	{
		key: "planner.temperature", flag: "planner-temperature", env: "AGENTIC_PLANNER_TEMPERATURE", kind: "float",
		usage: "model temperature, 0 to 2 (empty: the server's default)",
		set: func(c *Config, v string) error {
			if v = strings.TrimSpace(v); v == "" {
				c.Planner.Temperature = nil
				return nil
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("want a number like 0.2, got %q", v)
			}
			c.Planner.Temperature = &f
			return nil
		},
		get: func(c *Config) string {
			if c.Planner.Temperature == nil {
				return ""
			}
			return strconv.FormatFloat(*c.Planner.Temperature, 'g', -1, 64)
		},
	},
	{
		key: "planner.seed", flag: "planner-seed", env: "AGENTIC_PLANNER_SEED", kind: "int",
		usage: "sampling seed sent to the model (empty: none)",
		set: func(c *Config, v string) error {
			if v = strings.TrimSpace(v); v == "" {
				c.Planner.Seed = nil
				return nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("want an integer, got %q", v)
			}
			c.Planner.Seed = &n
			return nil
		},
		get: func(c *Config) string {
			if c.Planner.Seed == nil {
				return ""
			}
			return strconv.FormatInt(*c.Planner.Seed, 10)
		},
	},
}

func init() { settings = append(settings, plannerSettings...) }

// checkHTTPURL checks that u is an absolute http(s) URL.
func checkHTTPURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("must be an http(s) URL, got %q", u)
	}
	return nil
}

// validatePlanner reports the planner settings' problems through bad.
func (c *Config) validatePlanner(bad func(key, format string, args ...any)) {
	p := c.Planner
	if err := checkHTTPURL(p.BaseURL); err != nil {
		bad("planner.base_url", "%v (like %s)", err, DefaultPlannerBaseURL)
	}
	if p.Timeout <= 0 {
		bad("planner.timeout", "must be positive, got %s", p.Timeout)
	}
	if p.ClaimTimeout <= 0 {
		bad("planner.claim_timeout", "must be positive, got %s", p.ClaimTimeout)
	}
	if p.MaxTokens < 1 {
		bad("planner.max_tokens", "must be at least 1, got %d", p.MaxTokens)
	}
	if p.TokenBudget < 0 {
		bad("planner.token_budget", "must be 0 (no bound) or more, got %d", p.TokenBudget)
	}
	if p.Mode != PlannerModePlan && p.Mode != PlannerModeReact {
		bad("planner.mode", "must be %s or %s, got %q", PlannerModePlan, PlannerModeReact, p.Mode)
	}
	if p.Candidates < 1 || p.Candidates > MaxPlannerCandidates {
		bad("planner.candidates", "must be between 1 and %d, got %d", MaxPlannerCandidates, p.Candidates)
	}
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		bad("planner.temperature", "must be between 0 and 2, got %g", *p.Temperature)
	}
	if p.APIKeyEnv != "" && strings.ContainsAny(p.APIKeyEnv, "= \t") {
		bad("planner.api_key_env", "must be the name of an environment variable, got %q", p.APIKeyEnv)
	}
}
