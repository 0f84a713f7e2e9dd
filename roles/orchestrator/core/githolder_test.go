package core

import (
	"fmt"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// gitRun is an indexed run of n shell steps, with a git.worktree step at
// position at when at >= 0.
func gitRun(t *testing.T, n, at int) *Run {
	t.Helper()
	r := &Run{ID: event.NewID()}
	for i := range n {
		spec := event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: "true"}
		if i == at {
			spec = event.Step{ID: event.GitWorktreeStep, Kind: event.KindGitWorktree, Worktree: true}
		}
		r.Steps = append(r.Steps, &Step{Spec: spec, Status: StepPending})
	}
	if bad := r.buildIndex(); bad != "" {
		t.Fatal(bad)
	}
	return r
}

// TestGitHolderFoundOnce: Decide asks every running run for its git
// holder at every decision; the git.worktree step's position is found
// when the steps are indexed, not searched for among a long plan's
// steps at each asking — here, steps after the first are not read at all
// (a nil step there would stop a search).
func TestGitHolderFoundOnce(t *testing.T) {
	plain := gitRun(t, 2000, -1)
	git := gitRun(t, 2000, 0)
	git.Steps[0].Status, git.Steps[0].Node = StepSucceeded, "n1"
	plain.Steps[1], git.Steps[1] = nil, nil // read by no one now
	if h := plain.gitHolder(); h != "" {
		t.Errorf("a run without git: holder %q", h)
	}
	if h := git.gitHolder(); h != "n1" {
		t.Errorf("a git run: holder %q, want n1", h)
	}
}

// TestGitHolderSeesChanges: what gitHolder keeps hides no change: the
// worktree step's attempt succeeding, a revision's new step list (with
// or without a git step), a compensation appended, a run never indexed.
func TestGitHolderSeesChanges(t *testing.T) {
	r := gitRun(t, 5, 2)
	if h := r.gitHolder(); h != "" {
		t.Errorf("worktree not made: holder %q", h)
	}
	r.Steps[2].Status, r.Steps[2].Node = StepSucceeded, "n1"
	if h := r.gitHolder(); h != "n1" {
		t.Errorf("worktree made on n1: holder %q", h)
	}
	// A compensation of it (a git.discard is what compensates; a
	// git.worktree that compensates something does not hold the run).
	comp := &Step{Spec: event.Step{ID: "undo", Kind: event.KindGitWorktree}, Status: StepSucceeded, Node: "n2", Compensates: &event.Compensation{Step: "x"}}
	r.Steps = append(r.Steps, comp)
	r.buildIndex()
	if h := r.gitHolder(); h != "n1" {
		t.Errorf("after a compensation: holder %q, want n1", h)
	}
	// A revision without git.
	next := gitRun(t, 3, -1)
	r.Steps = next.Steps
	r.buildIndex()
	if h := r.gitHolder(); h != "" {
		t.Errorf("a revision without git: holder %q", h)
	}
	// A revision whose git step moved and is made on n3.
	moved := gitRun(t, 4, 3)
	moved.Steps[3].Status, moved.Steps[3].Node = StepSucceeded, "n3"
	r.Steps = moved.Steps
	r.buildIndex()
	if h := r.gitHolder(); h != "n3" {
		t.Errorf("a revision with git at 3: holder %q, want n3", h)
	}
	// A copy of the run with copies of its steps (afterAccept).
	if h := afterAccept(r, r.CreatedAt).gitHolder(); h != "n3" {
		t.Errorf("a copy: holder %q, want n3", h)
	}
	// A run never indexed is searched.
	raw := &Run{Steps: []*Step{{Spec: event.Step{ID: "a", Kind: event.KindShell}}, {Spec: event.Step{ID: "g", Kind: event.KindGitWorktree}, Status: StepSucceeded, Node: "n4"}}}
	if h := raw.gitHolder(); h != "n4" {
		t.Errorf("a run never indexed: holder %q, want n4", h)
	}
}
