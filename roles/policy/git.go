package policy

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
)

// judgeGit is the verdict on a step of a git run's own (examples/README.md,
// "Git runs"):
//
//   - git.worktree and git.discard: allowed — they make and remove the
//     run's own worktree and branch, in the executor's git directory,
//     never the repository's checkout;
//   - git.finish: allowed when the plan pushes nothing; with a push
//     remote, the verdict on the command `git push <remote> <branch>`
//     (the run id in the branch written RUN), so that the policy's rules
//     on git push apply to it like to a shell step's.
func (p *Policy) judgeGit(s event.Step, dir string) Verdict {
	if s.Kind == event.KindGitFinish && s.Git != nil && s.Git.Push != "" {
		v := p.JudgeIn(fmt.Sprintf("git push %s %s", s.Git.Push, s.Git.BranchFor("RUN")), dir)
		v.Why = "git.finish pushes the run's branch: " + v.Why
		return v
	}
	v := p.allowed(string(s.Kind))
	switch s.Kind {
	case event.KindGitFinish:
		v.Why = "git.finish records the pull request and pushes nothing"
	default:
		v.Why = "the run's own worktree and branch, never the repository's checkout"
	}
	return v
}
