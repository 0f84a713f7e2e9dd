package node

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/notify"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/agentic-dev/agentic/roles/planner/llm"
)

// newImprove builds the node's self-improvement loop (docs/improve.md):
// every ledger node folds the proposals and the settings they change
// (answering proposals.list, proposals.show and improve.settings, and
// giving its planner the approved notes); an orchestrator node, while it
// leads, evaluates the telemetry window it reads from its ledger for each
// pass, applies approved proposals, monitors and reverts them, and sends
// their news through the notification hooks (critical at once, high
// hourly, the rest daily).
func (n *Node) newImprove() *improve.Loop {
	cfg := improve.Config{Node: n.cfg.Name, Logger: n.log.With("component", "improve")}
	if orch := n.orch; orch != nil {
		cfg.Emit = n.outbox
		cfg.Epoch = orch.Leader // the loop's events are fenced like the orchestrator's decisions
		cfg.Ledger = n.store
		cfg.Drafter = n.proposalDrafter()
		if nt := n.notifier; nt != nil {
			cfg.Digest = &improve.Digest{Send: func(ctx context.Context, sev improve.Severity, items []improve.Item) error {
				ps := make([]notify.Proposal, len(items))
				for i, it := range items {
					ps[i] = notify.Proposal{ID: it.Proposal, Status: string(it.Status), Pattern: it.Pattern, Subject: it.Subject,
						Risk: it.Risk, Severity: string(it.Severity), Summary: it.Summary, At: it.At, Show: it.Show}
				}
				nt.SendProposals(ctx, string(sev), ps)
				return nil
			}}
		}
	}
	return improve.New(cfg)
}

// proposalDrafter is the planner's model as the improve loop's drafter
// (the proposals' text and, checked as the rule's own, their change), or
// nil when no planner.model is set. One draft waits at most
// improve.DefaultDraftTimeout, or planner.timeout when shorter.
func (n *Node) proposalDrafter() *improve.Drafter {
	pc := n.cfg.Planner
	if pc.Model == "" {
		return nil
	}
	key := ""
	if pc.APIKeyEnv != "" {
		key = os.Getenv(pc.APIKeyEnv)
	}
	model := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: pc.BaseURL, Model: pc.Model, APIKey: key})
	timeout := improve.DefaultDraftTimeout
	if pc.Timeout > 0 {
		timeout = min(timeout, pc.Timeout)
	}
	return &improve.Drafter{Model: model, Timeout: timeout, MaxTokens: pc.MaxTokens}
}

// proposalsList answers proposals.list: newest first, at most
// api.MaxProposals, policy and template texts and repository files'
// contents left out (proposals.show has them).
func (n *Node) proposalsList(_ context.Context, req api.ProposalsRequest) ([]improve.Proposal, error) {
	var out []improve.Proposal
	for _, p := range n.improve.Proposals() {
		if req.Status != "" && string(p.Status) != req.Status {
			continue
		}
		if len(out) == api.MaxProposals {
			break
		}
		p.Change, p.Rollback = brief(p.Change), brief(p.Rollback)
		out = append(out, p)
	}
	return out, nil
}

// brief is a change without its policy or template text, nor the
// contents of the files of a repository change.
func brief(c event.Change) event.Change {
	if c.Policy != nil {
		pc := *c.Policy
		pc.Text = ""
		c.Policy = &pc
	}
	if c.Template != nil {
		tc := *c.Template
		tc.Plan = ""
		c.Template = &tc
	}
	if c.Repository != nil {
		rc := *c.Repository
		rc.Files = make([]event.RepoFile, len(c.Repository.Files))
		for i, f := range c.Repository.Files {
			rc.Files[i] = event.RepoFile{Path: f.Path}
		}
		c.Repository = &rc
	}
	return c
}

// proposalsShow answers proposals.show.
func (n *Node) proposalsShow(_ context.Context, req api.ProposalRequest) (improve.Proposal, error) {
	id := strings.TrimSpace(req.ID)
	if id == "" {
		return improve.Proposal{}, fmt.Errorf("%w: name a proposal", api.ErrBadRequest)
	}
	p, ok := n.improve.Proposal(id)
	if !ok {
		return improve.Proposal{}, api.WithHint(fmt.Errorf("%w: no proposal %q", api.ErrNotFound, id), "agentctl proposal ls lists them")
	}
	return p, nil
}

// improveSettings answers improve.settings.
func (n *Node) improveSettings(context.Context, struct{}) (*improve.State, error) {
	return n.improve.Settings(), nil
}

// plannerNotes are the notes a plan's prompt carries: the approved ones
// (of the goal's family and of none), then the automatic notes of the
// command statistics that no proposal retired or pinned, marked as
// automatic.
func (n *Node) plannerNotes(family string, automatic []string) []string {
	if n.improve == nil {
		return automatic
	}
	auto := make(map[string]string, len(automatic))
	for _, text := range automatic {
		shape := text
		if _, rest, ok := strings.Cut(text, "`"); ok {
			shape, _, _ = strings.Cut(rest, "`")
		}
		auto[shape] = text
	}
	var out []string
	for _, note := range n.improve.PlannerNotes(family, auto) {
		if note.Source == improve.SourceAutomatic {
			out = append(out, note.Text+" (automatic, from the command statistics)")
			continue
		}
		out = append(out, note.Text)
	}
	return out
}
