package node

import (
	"os"

	"github.com/agentic-dev/agentic/roles/planner"
	"github.com/agentic-dev/agentic/roles/planner/llm"
)

// plannerConfig is the planner role's configuration: with planner.model
// set, free-text goals are planned by that model over the
// OpenAI-compatible API at planner.base_url.
func (n *Node) plannerConfig() planner.Config {
	pc := n.cfg.Planner
	cfg := planner.Config{Timeout: pc.Timeout}
	if pc.Model == "" {
		return cfg
	}
	key := ""
	if pc.APIKeyEnv != "" {
		if key = os.Getenv(pc.APIKeyEnv); key == "" {
			n.log.Warn("planner.api_key_env names an unset or empty variable: the model API gets no key",
				"variable", pc.APIKeyEnv)
		}
	}
	model := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: pc.BaseURL, Model: pc.Model, APIKey: key})
	cfg.Text = llm.NewSource(model, llm.Config{
		MaxTokens: pc.MaxTokens, Temperature: pc.Temperature, Seed: pc.Seed, TokenBudget: pc.TokenBudget,
	})
	n.log.Info("planner model", "base_url", pc.BaseURL, "model", pc.Model, "max_tokens", pc.MaxTokens)
	return cfg
}
