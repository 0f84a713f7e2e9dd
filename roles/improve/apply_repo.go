package improve

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// RepoValidation is the validation of a repository change: the
// forbidden-change checks (a git block that pushes its branch for a pull
// request, files with clean relative paths outside .git, within the
// limits, a plan the decoder accepts); nothing is replayed — the pull
// request is what a person reviews, and merging it is theirs.
func RepoValidation(c event.Change) event.Validation {
	n, repo := 0, ""
	if rc := c.Repository; rc != nil {
		n, repo = len(rc.Files), rc.Git.Repo+rc.Git.URL
	}
	return event.Validation{Method: "forbidden-checks",
		Summary: fmt.Sprintf("forbidden-change checks only: %d file(s) of %s, written by a git run whose pull request a person reviews and merges; "+
			"nothing is replayed", n, repo)}
}

// applyRepoLocked (tm and mu held) is the apply of an approved
// repository proposal. The leader cannot sign a goal (goal.submitted is
// an operator's), so an operator submits the proposal's git run
// (agentctl proposal apply); the leader waits for it: once its pull
// request is recorded (pr.opened, folded as the proposal's change) it
// emits proposal.applied naming the run and the pull request, and when
// the run ends without one, proposal.reverted saying how it ended. The
// approved proposal whose run nobody submitted stays approved.
func (l *Loop) applyRepoLocked(p *Proposal, now time.Time) []event.Draft {
	switch {
	case p.ChangeSeq != 0:
		if !l.onceLocked("applied/"+p.ID, now) {
			return nil
		}
		v, err := l.validateLocked(p, nil) // a repository change reads no window
		if err != nil {
			v.Summary = "applied; a check again now says: " + err.Error()
		}
		return []event.Draft{event.MustDraft(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: p.ID, Validation: v,
			Run: p.Run, PullRequest: p.PullRequest, Epoch: l.tm.epoch})}
	case p.RunFailed != "":
		if !l.onceLocked("reverted/"+p.ID, now) {
			return nil
		}
		return []event.Draft{event.MustDraft(event.ProposalReverted, "", event.ProposalOutcomeData{Proposal: p.ID,
			Baseline: p.Baseline, Threshold: l.cfg.Monitor.Threshold,
			Reason: "its git run opened no pull request: " + p.RunFailed + " (nothing was changed; a new proposal may try again)", Epoch: l.tm.epoch})}
	}
	return nil
}
