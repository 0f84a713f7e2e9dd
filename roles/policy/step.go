package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy/shell"
)

// JudgeStep is the policy's verdict on what running step s does, in the
// working directory dir — the one judgement the orchestrator makes before
// assigning a step and the executor makes again before running it:
//
//   - shell: the worse of its command's and its Check guard's verdicts,
//     and, when its Env sets a variable that can make programs run code
//     the command does not show (LD_PRELOAD, BASH_ENV… — shell.EnvCode),
//     an unresolved verdict at level high;
//   - file.write, file.patch: JudgeEdit;
//   - noop: allowed (it runs nothing);
//   - file.restore: allowed (it puts back before-images the executor
//     recorded itself, undoing an edit that was judged);
//   - tool: JudgeTool without facts (the executor judges again with
//     them, before the call).
//   - git.worktree, git.finish, git.discard: judgeGit.
//   - research: every source's host in scopes.network, else deny (rule
//     network); synthesise: allowed (judgeResearch).
//
// A kind the policy does not know is judged as a command it cannot
// resolve.
func (p *Policy) JudgeStep(s event.Step, dir string) Verdict {
	switch s.Kind {
	case event.KindShell:
		v := p.JudgeIn(s.Run, dir)
		if s.Check != "" {
			if c := p.JudgeIn(s.Check, dir); worseVerdict(c, v) {
				c.Why = "check: " + c.Why
				c.Command = v.Command
				v = c
			}
		}
		var names []string
		for k := range s.Env {
			if shell.EnvCode(k) {
				names = append(names, k)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			u := p.unresolvedVerdict(s.Run, fmt.Sprintf("env sets %s, which can make programs run code the command does not show", strings.Join(names, ", ")))
			if worseVerdict(u, v) {
				v = u
			}
		}
		return v
	case event.KindFileWrite, event.KindFilePatch:
		return p.JudgeEdit(s, dir)
	case event.KindTool:
		return p.JudgeTool(s, nil)
	case event.KindGitWorktree, event.KindGitFinish, event.KindGitDiscard:
		return p.judgeGit(s, dir) // git.go
	case event.KindResearch, event.KindSynthesise:
		return p.judgeResearch(s) // research.go
	case event.KindNoop, event.KindFileRestore, event.KindCritique:
		v := p.allowed(string(s.Kind))
		v.Why = "a noop runs nothing"
		switch s.Kind {
		case event.KindFileRestore:
			v.Why = "a restore puts back the before-images of an edit that was judged"
		case event.KindCritique:
			v.Why = "a critique runs nothing: a model judges its target's output"
		}
		return v
	}
	return p.unresolvedVerdict(string(s.Kind), fmt.Sprintf("step kind %q is not one the policy knows", s.Kind))
}

// worseVerdict reports whether a is a stricter verdict than b (action, then
// level).
func worseVerdict(a, b Verdict) bool {
	return a.Action > b.Action || a.Action == b.Action && a.Level > b.Level
}

// allowed is an allow verdict on command under p.
func (p *Policy) allowed(command string) Verdict {
	return Verdict{Command: command, Action: Allow, Level: Low, Rule: RuleDefault, Policy: p.Ref(), Reversible: true,
		Findings: []Finding{}, Highlights: []Highlight{}}
}

// unresolvedVerdict is the verdict on what cannot be judged statically:
// the policy's Unresolved action at level high, with its approvals.
func (p *Policy) unresolvedVerdict(command, why string) Verdict {
	a := p.Approvals[High]
	v := Verdict{Command: command, Action: p.Unresolved, Level: High, Rule: RuleUnresolved, Why: why, Policy: p.Ref(),
		Unresolved: true, Findings: []Finding{}, Highlights: []Highlight{}}
	if v.Action == Confirm {
		v.Approvals, v.NotSubmitter = a.Approvers, a.NotSubmitter
	}
	return v
}
