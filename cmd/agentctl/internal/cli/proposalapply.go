package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// proposalApplyResult is what proposal apply -o json prints.
type proposalApplyResult struct {
	Proposal string `json:"proposal"`
	Run      string `json:"run"`
	Event    string `json:"event"`
}

func (a *app) proposalApplyCmd() *cobra.Command {
	var wait bool
	c := &cobra.Command{
		Use:   "apply ID [--wait]",
		Short: "Submit the git run that applies an approved repository proposal",
		Long: `Submit the git run that applies an approved proposal whose change is to
files of a repository (change kind repository, docs/improve.md): a goal
signed with your operator credentials, naming the proposal, whose plan is
the proposal's — its git block (the repository, the base branch, the
remote the branch is pushed to, the pull request) and one file.write step
per file. The leader cannot sign a goal, so applying a repository change
is an operator's act; it records the proposal applied, with the pull
request, once the run opens it, or reverted when the run fails. Nothing
merges by itself: the pull request is the forge's, for a person to merge.
Other proposals are applied by the leader on approval: this command
refuses them, and a repository proposal that is not approved, or whose
run was submitted already.`,
		Example: `  agentctl proposal apply p-3f9a1c22b07e --wait`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.proposalApply(cmd.Context(), argv[0], wait)
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "follow the run until it finishes")
	return c
}

func (a *app) proposalApply(ctx context.Context, id string, wait bool) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	var p tuning.Proposal
	if err := c.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: id}, &p); err != nil {
		return fmt.Errorf("proposal apply %s (nothing was published): %w", id, err)
	}
	hint := "agentctl proposal show " + p.ID + " shows its history"
	switch {
	case p.Change.Kind != event.ChangeRepository:
		return api.WithHint(fmt.Errorf("proposal %s changes %s, not a repository: the leader applies it on approval; nothing was published", p.ID, p.Change.Kind), hint)
	case p.Status != tuning.StatusApproved:
		return api.WithHint(fmt.Errorf("proposal %s is %s, not approved: nothing was published", p.ID, p.Status), hint)
	case p.Run != "":
		return api.WithHint(fmt.Errorf("proposal %s is applied by run %s already: nothing was published", p.ID, p.Run), "agentctl run show "+p.Run)
	}
	text, err := tuning.ProposalPlan(&p)
	if err != nil {
		return err
	}
	name := p.ID + ".json"
	if _, err := plan.Parse(name, []byte(text)); err != nil {
		return fmt.Errorf("proposal %s: its plan does not check (nothing was published): %w", p.ID, err)
	}
	run := event.NewID()
	d, err := event.NewDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "proposal " + p.ID + ": " + p.RootCause,
		PlanFile: text, PlanName: name, Proposal: p.ID})
	if err != nil {
		return err
	}
	if err := envelope.CheckDraft(d); err != nil {
		return fmt.Errorf("proposal apply %s (nothing was published): %w", p.ID, err)
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("proposal apply %s: %w", p.ID, err)
	}
	if wait {
		return a.follow(ctx, run)
	}
	if a.output != formatText {
		return a.writeJSON(proposalApplyResult{Proposal: p.ID, Run: run, Event: d.ID})
	}
	fmt.Fprintf(a.env.Stdout, "submitted run %s applying proposal %s (event %s)\n", run, p.ID, d.ID)
	return nil
}
