package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodes"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/planner"
	"github.com/agentic-dev/agentic/roles/planner/llm"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/agentic-dev/agentic/roles/research"
)

// researchSources is the store a synthesis reads research sources from:
// the artifact store (bus/artifact), where executors put them.
func (n *Node) researchSources() research.Store {
	if n.conn == nil {
		return nil
	}
	return research.NewLazyStore(n.conn.JS)
}

// promptQueryTimeout bounds each query that gathers a prompt's inputs: a
// cluster that cannot answer quickly plans without them.
const promptQueryTimeout = 2 * time.Second

// plannerConfig is the planner role's configuration: with planner.model
// set, free-text goals are planned by that model over the
// OpenAI-compatible API at planner.base_url, with a prompt that carries
// the policy in force, the capabilities the live executors offer and the
// adaptive notes of the command statistics (promptInputs). planner.mode
// react plans a step at a time; planner.candidates asks for several plans
// and proposes the best by its score (roles/planner/llm).
func (n *Node) plannerConfig() planner.Config {
	pc := n.cfg.Planner
	// ClaimTimeout is the fallback while the ledger holds no claim timeout:
	// the protocol's default, the one the orchestrators use then.
	cfg := planner.Config{Timeout: pc.Timeout, ClaimTimeout: event.DefaultClaimTimeout, Settings: n.claimSettings(),
		Sources: n.researchSources(), Templates: n.familyTemplate}
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
		Mode: pc.Mode, Candidates: pc.Candidates, Inputs: n.promptInputs, Build: Version,
	})
	n.log.Info("planner model", "base_url", pc.BaseURL, "model", pc.Model, "max_tokens", pc.MaxTokens, "mode", pc.Mode, "candidates", pc.Candidates)
	return cfg
}

// promptInputs gathers what a plan's prompt tells beside the goal, by
// asking the cluster: the policy in force (policy.show), the capabilities
// of the live executors (nodes.list), the approved plugin tools
// (plugins.list, plugins.show) and the notes: those approved proposals
// made (docs/improve.md; a pinned automatic note is one of them, shown
// even once the statistics drop it), then the adaptive notes
// (memory.commands) no proposal retired or pinned, marked as automatic,
// with the command statistics themselves when plan candidates are scored
// by them. What does not answer in time is left out, and said
// in the log at debug.
func (n *Node) promptInputs(ctx context.Context, goal event.GoalSubmittedData) llm.Inputs {
	var in llm.Inputs
	if n.conn == nil {
		return in
	}
	c := n.apiClient(promptQueryTimeout)
	var pv api.PolicyVersion
	if err := c.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &pv); err == nil {
		if p, err := policy.Parse([]byte(pv.Text), "policy"); err == nil {
			in.Policy = p
		}
	} else {
		n.log.Debug("prompt: no policy", "err", err)
	}
	if p, err := c.Nodes(ctx); err == nil {
		for _, s := range p.Items {
			if s.State != nodes.StateAlive || !slices.Contains(s.Roles, event.RoleExecutor) {
				continue
			}
			for _, cp := range s.Capabilities {
				if !slices.Contains(in.Capabilities, cp) {
					in.Capabilities = append(in.Capabilities, cp)
				}
			}
		}
		slices.Sort(in.Capabilities)
	} else {
		n.log.Debug("prompt: no nodes", "err", err)
	}
	if tools, err := promptTools(ctx, c); err == nil {
		in.Tools = tools
	} else {
		n.log.Debug("prompt: no plugin tools", "err", err)
	}
	limit := 1
	if n.cfg.Planner.Candidates > 1 {
		limit = api.MaxCommands // the candidates' history score
	}
	if st, err := c.MemoryCommands(ctx, api.CommandsRequest{Limit: limit, Notes: 20}); err == nil {
		in.Notes = st.Notes
		if limit > 1 {
			for _, cs := range st.Commands {
				in.Commands = append(in.Commands, memory.CommandStat(cs))
			}
		}
	} else {
		n.log.Debug("prompt: no command notes", "err", err)
	}
	in.Notes = n.plannerNotes(goal.Family, in.Notes) // improve.go: the approved notes first
	in.Knowledge = promptKnowledge(ctx, c, goal)
	if goal.Family != "" {
		in.Template, _ = n.familyTemplate(goal.Family) // templates.go: the model's starting example
	}
	return in
}

// maxPromptNotes bounds the research notes a prompt carries.
const maxPromptNotes = 10

// promptKnowledge is the research notes relevant to goal: the best hits
// of a memory search of its words among the notes (scope kb), never a
// quarantined one — the search leaves them out, and a hit that says it
// is one is skipped all the same.
func promptKnowledge(ctx context.Context, c *api.Client, goal event.GoalSubmittedData) []string {
	q := goal.Text
	if q == "" {
		q = goal.Goal
	}
	if len(q) > api.MaxQueryLen {
		q = q[:api.MaxQueryLen]
	}
	if strings.TrimSpace(q) == "" {
		return nil
	}
	page, err := c.MemorySearch(ctx, api.MemorySearchRequest{Query: q, Scope: memory.ScopeKB,
		CursorRequest: api.CursorRequest{Limit: maxPromptNotes}})
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range page.Items {
		f := h.Fact
		if f.Quarantined || f.Note == nil {
			continue
		}
		var urls []string
		for _, cit := range f.Note.Citations {
			if !slices.Contains(urls, cit.URL) {
				urls = append(urls, cit.URL)
			}
		}
		out = append(out, fmt.Sprintf("[note %s] %s (confidence %.2f; sources: %s)", f.Key, f.Value, f.Note.Confidence, strings.Join(urls, ", ")))
	}
	return out
}
