package config

import (
	"strings"
	"testing"
)

func TestPlannerSettings(t *testing.T) {
	c := Default()
	if c.Planner.Mode != PlannerModePlan || c.Planner.Candidates != 1 {
		t.Fatalf("defaults: mode %q, candidates %d", c.Planner.Mode, c.Planner.Candidates)
	}
	env := []string{"AGENTIC_PLANNER_MODE=react", "AGENTIC_PLANNER_CANDIDATES=3", "AGENTIC_PLANNER_MODEL=llama3.1", "AGENTIC_PLANNER_TEMPERATURE=0.7", "AGENTIC_PLANNER_SEED=42", "AGENTIC_PLANNER_BASE_URL=http://gpu-box:8000/v1"}
	if err := c.ApplyEnv(env); err != nil {
		t.Fatal(err)
	}
	if c.Planner.Model != "llama3.1" || c.Planner.Temperature == nil || *c.Planner.Temperature != 0.7 ||
		c.Planner.Seed == nil || *c.Planner.Seed != 42 || c.Planner.BaseURL != "http://gpu-box:8000/v1" ||
		c.Planner.Mode != PlannerModeReact || c.Planner.Candidates != 3 {
		t.Fatalf("planner = %+v", c.Planner)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyEnv([]string{"AGENTIC_PLANNER_TEMPERATURE=warm"}); err == nil || !strings.Contains(err.Error(), "want a number") {
		t.Fatalf("err = %v", err)
	}
	bad := Default()
	temp := 3.0
	bad.Planner.BaseURL, bad.Planner.Temperature, bad.Planner.MaxTokens, bad.Planner.APIKeyEnv = "localhost:11434", &temp, 0, "KEY=sk-123"
	bad.Planner.Mode, bad.Planner.Candidates = "tree", 0
	err := bad.Validate()
	for _, want := range []string{"planner.base_url", "planner.temperature", "planner.max_tokens", "planner.api_key_env", "planner.mode", "planner.candidates"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want a problem with %s", err, want)
		}
	}
}
