package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

const gitPlan = `goal: fix the timeout
git:
  repo: /srv/repos/service
  base: main
  push: origin
  pull_request: {title: Fix the timeout, draft: true}
steps:
  - id: fix
    title: Fix the timeout
    path: config.txt
    content: "timeout: 30s\n"
  - id: test
    run: grep -q 30s config.txt
    depends_on: [fix]
`

// A plan with a git block gets the git steps around its own, every step
// marked Worktree, and the block on the plan and on the git steps; a
// second Normalize changes nothing.
func TestGitPlanNormalized(t *testing.T) {
	p, err := Parse("fix.yaml", []byte(gitPlan))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range p.Steps {
		ids = append(ids, st.ID)
		if !st.Worktree {
			t.Errorf("step %s is not marked worktree", st.ID)
		}
	}
	if want := []string{event.GitWorktreeStep, "fix", "test", event.GitFinishStep}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("steps %v, want %v", ids, want)
	}
	if p.Git == nil || p.Git.Base != "main" || p.Git.Push != "origin" || p.Git.PullRequest == nil || !p.Git.PullRequest.Draft {
		t.Fatalf("plan git %+v", p.Git)
	}
	wt, fin := p.Steps[0], p.Steps[3]
	if wt.Kind != event.KindGitWorktree || fin.Kind != event.KindGitFinish || wt.Git == nil || fin.Git == nil || !wt.Idempotent || fin.Idempotent {
		t.Fatalf("git steps %+v %+v", wt, fin)
	}
	if !reflect.DeepEqual(p.Steps[1].DependsOn, []string{event.GitWorktreeStep}) || !reflect.DeepEqual(fin.DependsOn, []string{"fix", "test"}) {
		t.Errorf("deps: fix %v, finish %v", p.Steps[1].DependsOn, fin.DependsOn)
	}
	if got := p.Git.BranchFor("r1"); got != "agentic/r1" {
		t.Errorf("branch %q", got)
	}
	again := *p
	again.Steps = append([]event.Step(nil), p.Steps...)
	if err := Normalize(&again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&again, p) {
		t.Errorf("Normalize changed a normalized git plan:\n%+v\n%+v", again.Steps, p.Steps)
	}
}

// Bad git blocks and steps that leave the worktree are refused, each with
// its place and a clear word.
func TestGitPlanErrors(t *testing.T) {
	step := "steps:\n  - {id: a, run: make}\n"
	tests := []struct {
		name, plan string
		want       []string
	}{
		{"no repo", "git: {base: main}\n" + step, []string{"git: git needs repo"}},
		{"both", "git: {repo: /r, url: 'https://x/y.git', base: main}\n" + step, []string{"git.url", "both repo and url"}},
		{"relative repo", "git: {repo: r, base: main}\n" + step, []string{"git.repo", "absolute path"}},
		{"no base", "git: {repo: /r}\n" + step, []string{"git.base", "git needs base"}},
		{"push to base", "git: {repo: /r, base: main, branch: main, push: origin}\n" + step, []string{"git.branch", "is the base branch", "never commits or pushes to its base"}},
		{"force push", "git: {repo: /r, base: main, push: '+origin'}\n" + step, []string{"git.push", "never a refspec"}},
		{"refspec", "git: {repo: /r, base: main, push: 'origin:main'}\n" + step, []string{"git.push"}},
		{"bad branch", "git: {repo: /r, base: main, branch: 'a..b{run}'}\n" + step, []string{"git.branch", "'..'"}},
		{"option branch", "git: {repo: /r, base: '-x'}\n" + step, []string{"git.base", "option"}},
		{"shared branch", "git: {repo: /r, base: main, branch: fixes}\n" + step, []string{"git.branch", "{run}"}},
		{"ext url", "git: {url: 'ext::sh -c touch% /tmp/x', base: main}\n" + step, []string{"git.url", "not taken"}},
		{"password url", "git: {url: 'https://u:hunter2hunter2@x/y.git', base: main}\n" + step, []string{"git.url", "password"}},
		{"unknown field", "git: {repo: /r, base: main, force: true}\n" + step, []string{"force"}},
		{"absolute cwd", "git: {repo: /r, base: main}\nsteps:\n  - {id: a, run: make, cwd: /etc}\n", []string{"steps[0].cwd", "leaves the run's worktree"}},
		{"escaping path", "git: {repo: /r, base: main}\nsteps:\n  - {id: a, path: ../x, content: y}\n", []string{"steps[0].path", "leaves the run's worktree"}},
		{"reserved id", "git: {repo: /r, base: main}\nsteps:\n  - {id: git-finish, run: make}\n", []string{"steps[0].id", "taken by the step the planner adds"}},
		{"git kind", "steps:\n  - {id: a, kind: git.finish}\n", []string{"steps[0].kind", "not for plans"}},
	}
	for _, p := range []*event.Plan{
		{Steps: []event.Step{{ID: "a", Run: "make", Worktree: true}}},
		{Steps: []event.Step{{ID: "a", Run: "make", Git: &event.GitSpec{Repo: "/r", Base: "main"}}}},
		{Git: &event.GitSpec{Repo: "/r", Base: "main"}, Steps: []event.Step{{ID: "a", Run: "make", Git: &event.GitSpec{Repo: "/x", Base: "main"}}}},
	} {
		if err := Validate(p); err == nil || !strings.Contains(err.Error(), "steps[0]") || !strings.Contains(err.Error(), "git") {
			t.Errorf("%+v: %v", p.Steps[0], err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.plan))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
