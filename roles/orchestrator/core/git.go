package core

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
)

// Git runs (examples/README.md, "Git runs"): the steps of a plan with a git
// block are marked Worktree, and the first of them, git-worktree (kind
// git.worktree), makes the run's worktree on the executor it is given to.
// From then on that executor holds the run: every other Worktree step is
// assigned to it and to no other (it waits while the holder has no room),
// one at a time (gitBusy), and when the holder is lost — failed or left — while steps of the run
// remain, the run fails with CodeWorktreeLost. Compensation then removes
// the branch and the worktree (git.discard, the undo of git.worktree, on
// the holder: it waits, as every compensation does, until the holder's
// executor announces itself again). The file edits of a git run are not
// restored one by one: the discard removes them with the worktree.

// CodeWorktreeLost: the executor that holds a git run's worktree was lost
// (failed or left) while steps of the run remained (a run's code).
const CodeWorktreeLost Code = "worktree_lost"

// gitHolder returns the node that holds r's worktree: the node whose
// git.worktree attempt succeeded; "" when r is not a git run or its
// worktree is not made yet.
//
// Decide asks it of every running run at every decision, so the step's
// position is found once, when the run's steps are indexed (buildIndex,
// run at every change of the step list): not by a search of all of a
// long plan's steps each time.
func (r *Run) gitHolder() string {
	var st *Step
	switch {
	case r.gitIndexed && r.gitAt == 0:
		return ""
	case r.gitIndexed && r.gitAt <= len(r.Steps) && isGitWorktree(r.Steps[r.gitAt-1]):
		st = r.Steps[r.gitAt-1]
	default: // never indexed
		for _, s := range r.Steps {
			if isGitWorktree(s) {
				st = s
				break
			}
		}
	}
	if st == nil || st.Status != StepSucceeded {
		return ""
	}
	return st.Node
}

// isGitWorktree reports whether st makes its run's worktree: a
// git.worktree step that compensates nothing.
func isGitWorktree(st *Step) bool {
	return st.Spec.Kind == event.KindGitWorktree && st.Compensates == nil
}

// pinnedNode is where the next attempt of st goes when st is a step of a
// git run whose worktree is made: its holder when the holder can take it
// now, else "" (the step waits). pinned is false for every other step,
// which pickNode places.
func (d *decider) pinnedNode(r *Run, st *Step) (node string, pinned bool) {
	if !st.Spec.Worktree {
		return "", false
	}
	holder := r.gitHolder()
	if holder == "" {
		return "", false
	}
	ex := d.s.Executors[holder]
	if !d.s.schedulable(holder, ex) || d.load[holder] >= ex.Capacity() || !ex.Offers(st.Spec.Capabilities) || d.gitBusy(r, st) {
		return "", true
	}
	return holder, true
}

// gitBusy reports whether another step of git run r holds its worktree:
// assigned or running, or its assignment in flight or decided in this
// round. The steps of a git run run one at a time, so that each commit
// holds exactly its step's edit and a validation sees no edit half made.
func (d *decider) gitBusy(r *Run, st *Step) bool {
	for _, o := range r.Steps {
		if o != st && o.Spec.Worktree && o.Compensates == nil && o.Active() {
			return true
		}
	}
	other := func(run, step string) bool {
		if run != r.ID || step == st.Spec.ID {
			return false
		}
		_, _, o := d.s.step(run, step)
		return o != nil && o.Spec.Worktree && o.Compensates == nil
	}
	for ref := range d.assigning {
		if other(ref.run, ref.step) {
			return true
		}
	}
	for _, dec := range d.out {
		if dec.Key.Kind == KindAssign && other(dec.Key.Run, dec.Key.Step) {
			return true
		}
	}
	return false
}

// worktreeLost says why git run r cannot go on — the executor holding
// its worktree was lost (Run.WorktreeLost, folded), or a step needs
// capabilities that executor does not offer — or "".
func (d *decider) worktreeLost(r *Run) string {
	if r.WorktreeLost != "" {
		return r.WorktreeLost
	}
	holder := r.gitHolder()
	if holder == "" {
		return ""
	}
	ex := d.s.Executors[holder]
	for _, st := range r.Steps {
		if st.Spec.Worktree && st.Compensates == nil && !st.Terminal() && ex != nil && !ex.Offers(st.Spec.Capabilities) {
			return fmt.Sprintf("step %s needs capabilities %v, which node %s, holding the run's git worktree, does not offer", st.Spec.ID, st.Spec.Capabilities, holder)
		}
	}
	return ""
}

// loseWorktrees records, in every live git run whose worktree node holds
// and that has steps left, that the node was lost (why): such a run fails
// with CodeWorktreeLost, even if the node comes back before its
// compensation ends.
func (s *State) loseWorktrees(node, why string) {
	for _, r := range s.Runs {
		if r.WorktreeLost != "" || r.gitHolder() != node {
			continue
		}
		for _, st := range r.Steps {
			if st.Spec.Worktree && st.Compensates == nil && !st.Terminal() {
				r.WorktreeLost = why
				break
			}
		}
	}
}

// gitUndone reports whether st's changes are undone by its run's
// git.discard rather than by a compensation of their own: a file edit in
// a git run's worktree.
func gitUndone(spec event.Step) bool {
	return spec.Worktree && (spec.Kind == event.KindFileWrite || spec.Kind == event.KindFilePatch)
}

// discardOrphaned says why the git.discard that undoes st — a
// git.worktree — cannot run, or "": the node holding the worktree was
// revoked, so it can never report the discard (the ledger refuses what
// it signs), and the run must not wait for it. The branch and worktree
// stay on that node: its executor's sweep at start removes those of
// ended runs, or an operator does.
func (d *decider) discardOrphaned(st *Step) string {
	if undoKind(st.Spec) != event.KindGitDiscard {
		return ""
	}
	if ex := d.s.Executors[st.Node]; ex != nil && ex.Gone == NodeRevoked {
		return fmt.Sprintf("git.discard of step %s not run: node %s, which holds the run's worktree and branch, was revoked; they stay on it until its executor, enrolled again, sweeps them at start, or an operator removes them",
			st.Spec.ID, st.Node)
	}
	return ""
}
