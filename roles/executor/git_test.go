package executor

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// gitRepo makes a repository with a main branch of one commit, with the
// git CLI, for the test.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: the git steps are tested with the real git CLI (apt-get install git; .ci/run does)")
	}
	repo := filepath.Join(t.TempDir(), "repo")
	for _, args := range [][]string{
		{"init", "--quiet", repo},
		{"-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first"},
	} {
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// A step of a git run that the policy gates runs with the approval of
// the step as assigned — its cwd relative to the worktree —, though the
// executor runs it in the worktree; an approval of another step still
// does not count.
func TestGitStepApprovalOfTheAssignedStep(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	ref := led.refs[1]
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Safety.Policies = APIPolicies(led.client)
		c.Git.Dir = filepath.Join(h.work, "git")
	})
	spec := &event.GitSpec{Repo: gitRepo(t), Base: "main"}
	h.assignJudged("exec-1", "r1", event.Step{ID: event.GitWorktreeStep, Kind: event.KindGitWorktree, Worktree: true, Git: spec}, ref, "")
	if f := result(t, rec, event.GitWorktreeStep); f.Status != event.TaskSucceeded {
		t.Fatalf("git-worktree: %+v", f)
	}
	gated := event.Step{ID: "gated", Kind: event.KindShell, Run: "sleep 0; pwd", Worktree: true}
	h.assignJudged("exec-1", "r1", gated, ref, event.GateSubject(gated, ref))
	f := result(t, rec, "gated")
	if f.Status != event.TaskSucceeded || f.Cwd != filepath.Join(h.work, "git", "r1") {
		t.Fatalf("approved step of a git run: %+v", f)
	}
	other := event.Step{ID: "other", Kind: event.KindShell, Run: "sleep 0; pwd", Worktree: true}
	h.assignJudged("exec-1", "r1", other, ref, event.GateSubject(event.Step{ID: "other", Kind: event.KindShell, Run: "sleep 1", Worktree: true}, ref))
	h.refusedWith(t, rec, "other", "not approved for this exact command")
}
