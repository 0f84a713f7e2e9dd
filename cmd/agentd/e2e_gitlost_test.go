package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// TestGitWorktreeHolderLost: real agentd processes. The executor holding
// a git run's worktree is killed (-9) while a step of the run runs: the
// run does not go on elsewhere; once the executor is back, compensation
// removes the branch and the worktree on it, and the run ends failed with
// code worktree_lost — the user's checkout and its branches as they were.
func TestGitWorktreeHolderLost(t *testing.T) {
	requireE2E(t)
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "--quiet", repo)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", repo, "add", "a.txt")
	git("-C", repo, "commit", "--quiet", "-m", "a")
	branchesBefore := git("-C", repo, "branch", "--list")

	tr := startTriad(t)
	id := tr.a.submit(writePlan(t, `goal: Fix a, then check at length
git:
  repo: `+repo+`
  base: main
steps:
  - id: fix
    path: a.txt
    content: "fixed\n"
  - id: long
    run: sleep 30
    depends_on: [fix]
`))
	s := waitStep(t, tr.a, id, "long", "step long running", 60*time.Second, func(s stepView) bool { return s.Status == "running" })
	x := tr.node(s.Node)
	if x == nil || x == tr.a {
		t.Fatalf("step long runs on %q, want b or c", s.Node)
	}
	if !strings.Contains(git("-C", repo, "branch", "--list"), "agentic/") {
		t.Fatal("no run branch while the run works")
	}
	x.kill9()
	poll.Eventually(t, 60*time.Second, "node.failed of the holder", func() bool {
		for _, l := range tr.a.audit() {
			if l.Type == "node.failed" && strings.Contains(string(l.Data), `"node":"`+x.name+`"`) {
				return true
			}
		}
		return false
	})
	// Nothing of the run goes to the other executor meanwhile.
	for _, l := range tr.a.audit("--run", id) {
		if l.Type == "task.assigned" && strings.Contains(string(l.Data), `"node":"`+tr.other(x).name+`"`) {
			t.Fatalf("a step of the git run was given to %s, which does not hold the worktree: %s", tr.other(x).name, l.Data)
		}
	}
	x.restart()
	v := tr.a.waitRun(id, 120*time.Second)
	if v.Status != "failed" || !strings.Contains(v.Reason, "compensated: git-worktree") {
		t.Fatalf("run after losing the worktree's holder: %s", v.dump())
	}
	code := ""
	for _, l := range tr.a.audit("--run", id) {
		if l.Type == "run.finished" && strings.Contains(string(l.Data), `"code":"worktree_lost"`) {
			code = "worktree_lost"
		}
	}
	if code == "" {
		t.Errorf("run.finished carries no code worktree_lost: %s", v.dump())
	}
	if got := git("-C", repo, "branch", "--list"); got != branchesBefore {
		t.Errorf("branches after compensation:\n%s\nwant as before:\n%s", got, branchesBefore)
	}
	if wt := git("-C", repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left after compensation:\n%s", wt)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "a\n" {
		t.Errorf("the user's checkout changed: a.txt %q", b)
	}
}
