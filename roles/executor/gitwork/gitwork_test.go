package gitwork_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/gitwork"
	"github.com/agentic-dev/agentic/roles/executor/runner"
)

// gitT runs the git CLI for the test's own setup and checks.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// runnerExec runs git through the runner, as the executor does.
func runnerExec(ctx context.Context, dir string, env map[string]string, args ...string) (string, error) {
	var out strings.Builder
	res := runner.Run(ctx, runner.Spec{Kind: event.KindShell, Args: append(gitwork.Args("agentic", "agentic@test"), args...), Cwd: dir, Env: env},
		runner.Options{}, nil, func(s string, b []byte) {
			if s == runner.StreamStdout {
				out.Write(b)
			}
		})
	if res.Status != event.TaskSucceeded {
		return out.String(), errors.New(res.Error + ": " + res.OutputTail)
	}
	return out.String(), nil
}

type fixture struct {
	dir, repo, remote string
	w                 *gitwork.Work
}

func newFixture(t *testing.T) fixture {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: the git steps are tested with the real git CLI (apt-get install git; .ci/run does)")
	}
	dir := t.TempDir()
	f := fixture{dir: dir, repo: filepath.Join(dir, "repo"), remote: filepath.Join(dir, "remote.git")}
	gitT(t, dir, "init", "--quiet", "--bare", f.remote)
	gitT(t, dir, "init", "--quiet", f.repo)
	if err := os.WriteFile(filepath.Join(f.repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, f.repo, "add", "a.txt")
	gitT(t, f.repo, "commit", "--quiet", "-m", "a")
	gitT(t, f.repo, "remote", "add", "origin", f.remote)
	gitT(t, f.repo, "push", "--quiet", "origin", "main")
	f.w = gitwork.New(gitwork.Config{Dir: filepath.Join(dir, "work"), StateDir: filepath.Join(dir, "state"), Git: runnerExec})
	return f
}

// The executor refuses to push to the base branch even when the state
// it is handed says the run's branch is the base (a plan check bypassed):
// nothing reaches the remote.
func TestFinishRefusesPushToBase(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := event.GitSpec{Repo: f.repo, Base: "main", Push: "origin"}
	if _, err := f.w.Create(ctx, "r1", event.GitSpec{Repo: f.repo, Base: "main", Branch: "main"}, nil); err == nil || !strings.Contains(err.Error(), "is the base branch") {
		t.Fatalf("create on the base: %v", err)
	}
	st, err := f.w.Create(ctx, "r1", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := gitT(t, f.remote, "for-each-ref")
	// The state file says the branch is main, as a tampered or buggy
	// record would.
	b, err := os.ReadFile(filepath.Join(f.dir, "state", "r1.json"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(b), `"branch":"`+st.Branch+`"`, `"branch":"main"`, 1)
	if err := os.WriteFile(filepath.Join(f.dir, "state", "r1.json"), []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.Finish(ctx, "r1", spec, nil); !errors.Is(err, gitwork.ErrPushToBase) {
		t.Fatalf("finish: %v, want ErrPushToBase", err)
	}
	if after := gitT(t, f.remote, "for-each-ref"); after != before {
		t.Errorf("the remote changed:\n%s\nwas:\n%s", after, before)
	}
}

// A branch that exists before the run is refused, and discarding that
// run leaves it where it was: Discard deletes only what it made.
func TestDiscardKeepsBranchItDidNotMake(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	gitT(t, f.repo, "branch", "agentic/r2")
	before := gitT(t, f.repo, "for-each-ref")
	_, err := f.w.Create(ctx, "r2", event.GitSpec{Repo: f.repo, Base: "main"}, nil)
	if err == nil || !strings.Contains(err.Error(), "already has a branch agentic/r2") {
		t.Fatalf("create over an existing branch: %v", err)
	}
	if err := f.w.Discard(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if after := gitT(t, f.repo, "for-each-ref"); after != before {
		t.Errorf("refs changed:\n%s\nwere:\n%s", after, before)
	}
}

// Create, an edit, Commit and Discard: one commit with its trailers while
// the worktree lives, then nothing left — and Create again finds the
// worktree it made.
func TestWorktreeLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := gitT(t, f.repo, "for-each-ref") + gitT(t, f.repo, "worktree", "list", "--porcelain")
	st, err := f.w.Create(ctx, "r3", event.GitSpec{Repo: f.repo, Base: "main"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.w.Create(ctx, "r3", event.GitSpec{Repo: f.repo, Base: "main"}, nil); err != nil || again.Worktree != st.Worktree {
		t.Fatalf("create again: %+v %v", again, err)
	}
	if id, err := f.w.Commit(ctx, "r3", "fix(plan): nothing", nil); err != nil || id != "" {
		t.Fatalf("commit of nothing: %q %v", id, err)
	}
	if err := os.WriteFile(filepath.Join(st.Worktree, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := f.w.Commit(ctx, "r3", "fix(plan): add b", [][2]string{{"Agentic-Step", "b"}})
	if err != nil || len(id) != 40 {
		t.Fatalf("commit: %q %v", id, err)
	}
	if msg := gitT(t, f.repo, "log", "-1", "--format=%B", "agentic/r3"); !strings.Contains(msg, "fix(plan): add b") || !strings.Contains(msg, "Agentic-Step: b") {
		t.Errorf("message %q", msg)
	}
	if err := f.w.Discard(ctx, "r3"); err != nil {
		t.Fatal(err)
	}
	if after := gitT(t, f.repo, "for-each-ref") + gitT(t, f.repo, "worktree", "list", "--porcelain"); after != before {
		t.Errorf("after discard:\n%s\nbefore:\n%s", after, before)
	}
	if _, err := f.w.Load("r3"); !errors.Is(err, gitwork.ErrNoWorktree) {
		t.Errorf("state after discard: %v", err)
	}
}

// A url run works in the executor's own clone: the commits go to the
// remote's new branch on Finish, the remote's base stays, and a second
// run fetches the clone again instead of cloning.
func TestURLRunPushes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := event.GitSpec{URL: "file://" + f.remote, Base: "main", Push: "origin"}
	baseBefore := gitT(t, f.remote, "rev-parse", "main")
	st, err := f.w.Create(ctx, "r4", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Repo == f.repo || !strings.HasPrefix(st.Repo, filepath.Join(f.dir, "work", "clones")) {
		t.Fatalf("repo %s, want the executor's clone", st.Repo)
	}
	if err := os.WriteFile(filepath.Join(st.Worktree, "c.txt"), []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.w.Commit(ctx, "r4", "fix(plan): add c", [][2]string{{"Agentic-Step", "c"}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.w.Finish(ctx, "r4", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || len(res.Commits) != 1 || res.Commits[0].Step != "c" || res.RemoteURL != "file://"+f.remote {
		t.Errorf("result %+v", res)
	}
	if got := gitT(t, f.remote, "rev-parse", "agentic/r4"); strings.TrimSpace(got) != res.Head {
		t.Errorf("remote branch at %s, head %s", got, res.Head)
	}
	if got := gitT(t, f.remote, "rev-parse", "main"); got != baseBefore {
		t.Errorf("remote main moved")
	}
	if _, err := os.Stat(st.Worktree); !os.IsNotExist(err) {
		t.Errorf("worktree left: %v", err)
	}
	if _, err := f.w.Create(ctx, "r5", spec, nil); err != nil {
		t.Fatalf("second run on the clone: %v", err)
	}
}

// A Create interrupted after `git worktree add` made the branch, before
// it recorded so, is finished by the next Create (the step is
// idempotent), and Discard then removes what it made.
func TestCreateResumesAfterCrash(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := event.GitSpec{Repo: f.repo, Base: "main"}
	before := gitT(t, f.repo, "for-each-ref") + gitT(t, f.repo, "worktree", "list", "--porcelain")
	st, err := f.w.Create(ctx, "r6", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The state as it was written before the worktree was made.
	b, err := os.ReadFile(filepath.Join(f.dir, "state", "r6.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "state", "r6.json"), []byte(strings.Replace(string(b), `"made":true`, `"made":false`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := f.w.Create(ctx, "r6", spec, nil)
	if err != nil || !again.Made || again.Worktree != st.Worktree {
		t.Fatalf("create after the crash: %+v %v", again, err)
	}
	if err := f.w.Discard(ctx, "r6"); err != nil {
		t.Fatal(err)
	}
	if after := gitT(t, f.repo, "for-each-ref") + gitT(t, f.repo, "worktree", "list", "--porcelain"); after != before {
		t.Errorf("after discard:\n%s\nbefore:\n%s", after, before)
	}
}
