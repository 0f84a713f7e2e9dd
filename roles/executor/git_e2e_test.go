package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gitT runs git (the real CLI) in dir for the test and returns its
// output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// gitFixture is a user's checkout with a bare remote, and a forge stub.
type gitFixture struct {
	remote, checkout string
	forge            *httptest.Server
	mu               sync.Mutex
	posts            []map[string]any
	paths            []string
	tn               *nodetest.Node
}

func newGitFixture(t *testing.T) *gitFixture {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: the git steps are tested with the real git CLI (apt-get install git; .ci/run does)")
	}
	dir := t.TempDir()
	f := &gitFixture{remote: filepath.Join(dir, "forge", "acme", "service.git"), checkout: filepath.Join(dir, "checkout")}
	if err := os.MkdirAll(f.remote, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, f.remote, "init", "--quiet", "--bare")
	gitT(t, dir, "init", "--quiet", f.checkout)
	if err := os.WriteFile(filepath.Join(f.checkout, "config.txt"), []byte("timeout: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, f.checkout, "add", "config.txt")
	gitT(t, f.checkout, "commit", "--quiet", "-m", "first")
	gitT(t, f.checkout, "remote", "add", "origin", f.remote)
	gitT(t, f.checkout, "push", "--quiet", "origin", "main")
	// Work in progress in the user's checkout, which a run never touches.
	if err := os.WriteFile(filepath.Join(f.checkout, "wip.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	f.forge = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.posts = append(f.posts, body)
		f.paths = append(f.paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"number": 42, "html_url": "https://forge.example/acme/service/pull/42"}`))
	}))
	t.Cleanup(f.forge.Close)
	tok := filepath.Join(dir, "forge.token")
	if err := os.WriteFile(tok, []byte("forge-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Executor.Forges = map[string]config.ForgeConfig{"stub": {API: f.forge.URL, TokenFile: tok}}
	f.tn = nodetest.Start(t, cfg)
	t.Cleanup(func() { f.tn.Stop(t) })
	return f
}

// snapshot is what must not change in the user's repository and the
// remote: every ref, the checkout's status and its worktrees.
func (f *gitFixture) snapshot(t *testing.T) string {
	return "remote:\n" + gitT(t, f.remote, "for-each-ref") +
		"checkout refs:\n" + gitT(t, f.checkout, "for-each-ref") +
		"status:\n" + gitT(t, f.checkout, "status", "--porcelain", "--untracked-files=all") +
		"worktrees:\n" + gitT(t, f.checkout, "worktree", "list", "--porcelain")
}

func (f *gitFixture) plan(check string) string {
	return fmt.Sprintf(`goal: fix the timeout
git:
  repo: %s
  base: main
  push: origin
  forge: stub
  pull_request: {title: Fix the timeout, draft: true}
steps:
  - id: fix
    title: Set the timeout to 30s
    path: config.txt
    content: "timeout: 30s\n"
  - id: notes
    title: Say why
    path: NOTES.md
    content: "The timeout was too short.\n"
    depends_on: [fix]
  - id: test
    run: %s
    depends_on: [notes]
`, f.checkout, check)
}

// prOpened returns the run's pr.opened events.
func (f *gitFixture) prOpened(t *testing.T, run string) []event.PROpenedData {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []event.PROpenedData
	for l, err := range f.tn.API.AuditLines(ctx, api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type != string(event.PROpened) {
			continue
		}
		var d event.PROpenedData
		if err := json.Unmarshal(l.Data, &d); err != nil {
			t.Fatal(err)
		}
		if l.Node != d.Node || d.Node == "" {
			t.Errorf("pr.opened signed by %s, names node %s", l.Node, d.Node)
		}
		out = append(out, d)
	}
	return out
}

// A two-edit git run ends with a branch of two commits on the bare
// remote, each saying its run, step and event; the base branch and the
// user's checkout untouched; pr.opened recorded with the commits, the
// diff's hash and the validation; the forge stub asked once for the
// pull request of that branch into main.
func TestGitRunOpensPullRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs git")
	}
	f := newGitFixture(t)
	baseBefore := gitT(t, f.remote, "rev-parse", "main")
	checkoutBefore := gitT(t, f.checkout, "status", "--porcelain", "--untracked-files=all") + gitT(t, f.checkout, "rev-parse", "HEAD")

	run := f.tn.Submit(t, "fix.yaml", f.plan("grep -q 30s config.txt && test -f NOTES.md"))
	r := f.tn.WaitRun(t, run, 90*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", run, r.Status, r.Reason)
	}
	branch := "agentic/" + run
	if got := gitT(t, f.remote, "rev-parse", "main"); got != baseBefore {
		t.Errorf("the remote's main moved: %s -> %s", baseBefore, got)
	}
	log := gitT(t, f.remote, "log", "--reverse", "--format=%H %s%n%b%x00", "main.."+branch)
	commits := strings.Split(strings.TrimSuffix(strings.TrimSpace(log), "\x00"), "\x00")
	if len(commits) != 2 {
		t.Fatalf("%d commits on %s, want 2:\n%s", len(commits), branch, log)
	}
	for i, want := range []string{"fix(plan): Set the timeout to 30s", "fix(plan): Say why"} {
		c := commits[i]
		if !strings.Contains(c, want) || !strings.Contains(c, "Agentic-Run: "+run) || !strings.Contains(c, "Agentic-Event: ") ||
			!strings.Contains(c, "Agentic-Step: "+[]string{"fix", "notes"}[i]) {
			t.Errorf("commit %d:\n%s", i, c)
		}
	}
	if got := gitT(t, f.remote, "show", branch+":config.txt"); got != "timeout: 30s\n" {
		t.Errorf("config.txt on the branch: %q", got)
	}
	if got := gitT(t, f.checkout, "status", "--porcelain", "--untracked-files=all") + gitT(t, f.checkout, "rev-parse", "HEAD"); got != checkoutBefore {
		t.Errorf("the user's checkout changed:\n%s\nwas:\n%s", got, checkoutBefore)
	}
	if wt := gitT(t, f.checkout, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("the run's worktree was not removed:\n%s", wt)
	}

	prs := f.prOpened(t, run)
	if len(prs) != 1 {
		t.Fatalf("%d pr.opened, want 1", len(prs))
	}
	pr := prs[0]
	if pr.Base != "main" || pr.Head != branch || pr.Remote != "origin" || len(pr.Commits) != 2 || pr.Commits[0].Step != "fix" ||
		len(pr.DiffHash) != 64 || pr.Number != 42 || pr.Forge != "stub" || !pr.Draft || pr.Title != "Fix the timeout" {
		t.Errorf("pr.opened %+v", pr)
	}
	if len(pr.Validations) != 1 || pr.Validations[0].Step != "test" || pr.Validations[0].Status != event.TaskSucceeded {
		t.Errorf("validations %+v", pr.Validations)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.posts) != 1 {
		t.Fatalf("the forge got %d requests, want 1", len(f.posts))
	}
	if p := f.posts[0]; p["head"] != branch || p["base"] != "main" || p["draft"] != true || f.paths[0] != "POST /repos/acme/service/pulls Bearer forge-test-token" {
		t.Errorf("forge request %s %v", f.paths[0], p)
	}
}

// The same run failing in its validation leaves the remote and the
// user's repository exactly as they were — refs, status, worktrees —:
// nothing pushed, the branch and the worktree discarded, no pr.opened,
// no request to the forge.
func TestGitRunFailingLeavesNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs git")
	}
	f := newGitFixture(t)
	before := f.snapshot(t)
	run := f.tn.Submit(t, "fix.yaml", f.plan("grep -q 45s config.txt"))
	r := f.tn.WaitRun(t, run, 90*time.Second)
	if r.Status != event.RunFailed {
		t.Fatalf("run %s: %s (%s)", run, r.Status, r.Reason)
	}
	if !strings.Contains(r.Reason, "compensated: git-worktree") {
		t.Errorf("reason %q does not say the worktree was discarded", r.Reason)
	}
	if after := f.snapshot(t); after != before {
		t.Errorf("the repositories changed:\n%s\nwere:\n%s", after, before)
	}
	if prs := f.prOpened(t, run); len(prs) != 0 {
		t.Errorf("pr.opened recorded for a failed run: %+v", prs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.posts) != 0 {
		t.Errorf("the forge got %d requests", len(f.posts))
	}
}

// A plan that would push to its base branch is refused before it runs,
// saying why.
func TestGitRunToBaseRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	f := newGitFixture(t)
	before := f.snapshot(t)
	plan := strings.Replace(f.plan("true"), "  base: main\n", "  base: main\n  branch: main\n", 1)
	run := f.tn.Submit(t, "to-main.yaml", plan)
	r := f.tn.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunFailed || !strings.Contains(r.Reason, `branch "main" is the base branch`) {
		t.Fatalf("run %s: %s (%s)", run, r.Status, r.Reason)
	}
	if after := f.snapshot(t); after != before {
		t.Errorf("the repositories changed:\n%s\nwere:\n%s", after, before)
	}
}

// examples/git-fix.yaml runs as its header says, on a repository like the
// one it describes: two commits on the run's branch, pr.opened recorded,
// nothing pushed (it names no push remote).
func TestGitFixExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs git")
	}
	f := newGitFixture(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "git-fix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	remoteBefore := gitT(t, f.remote, "for-each-ref")
	run := f.tn.Submit(t, "git-fix.yaml", strings.ReplaceAll(string(b), "/tmp/agentic-git/service", f.checkout))
	r := f.tn.WaitRun(t, run, 90*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", run, r.Status, r.Reason)
	}
	if n := strings.TrimSpace(gitT(t, f.checkout, "rev-list", "--count", "main..agentic/"+run)); n != "2" {
		t.Errorf("%s commits on the run's branch, want 2", n)
	}
	if prs := f.prOpened(t, run); len(prs) != 1 || prs[0].Remote != "" || len(prs[0].Commits) != 2 || prs[0].Forge != "" {
		t.Errorf("pr.opened %+v", prs)
	}
	if after := gitT(t, f.remote, "for-each-ref"); after != remoteBefore {
		t.Errorf("the remote changed")
	}
}
