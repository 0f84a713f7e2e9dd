package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// gitRun runs the real git CLI in dir, isolated from the user's config.
func gitRun(t *testing.T, dir string, args ...string) string {
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

// TestProposalApplyOpensPullRequest: a repository proposal on a real
// node with a local bare remote and a forge stand-in: proposal apply is
// refused until it is approved; approved, it submits the git run whose
// plan is the proposal's, which pushes a branch with the file and opens
// the pull request; the proposal is then applied with the pull request's
// URL, the remote's main is untouched (nothing merges), and a second
// apply is refused.
func TestProposalApplyOpensPullRequest(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: apt-get install git")
	}
	dir := t.TempDir()
	remote, checkout := filepath.Join(dir, "forge", "acme", "notes.git"), filepath.Join(dir, "checkout")
	if err := os.MkdirAll(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, remote, "init", "--quiet", "--bare")
	gitRun(t, dir, "init", "--quiet", checkout)
	if err := os.WriteFile(filepath.Join(checkout, "README"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, checkout, "add", "README")
	gitRun(t, checkout, "commit", "--quiet", "-m", "first")
	gitRun(t, checkout, "remote", "add", "origin", remote)
	gitRun(t, checkout, "push", "--quiet", "origin", "main")
	mainBefore := gitRun(t, remote, "rev-parse", "main")

	var mu sync.Mutex
	var posts []map[string]any
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		posts = append(posts, body)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"number": 7, "html_url": "https://forge.example/acme/notes/pull/7"}`))
	}))
	t.Cleanup(forge.Close)
	tok := filepath.Join(dir, "forge.token")
	if err := os.WriteFile(tok, []byte("forge-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Executor.Forges = map[string]config.ForgeConfig{"stub": {API: forge.URL, TokenFile: tok}}
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}

	// The proposal, signed as an orchestrator of the cluster would sign it.
	root, err := trust.LoadRoot(n.Dir) // with its private key
	if err != nil {
		t.Fatal(err)
	}
	orch, err := trust.NewIdentity(root, "test-orchestrator", trust.KindNode, []string{event.RoleOrchestrator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	change := event.Change{Kind: event.ChangeRepository, Setting: event.SettingRepository, Repository: &event.RepoChange{
		Git:   event.GitSpec{Repo: checkout, Base: "main", Push: "origin", Forge: "stub", PullRequest: &event.PullRequestSpec{}},
		Files: []event.RepoFile{{Path: "notes/planner.md", Content: "plan the form that works the first time\n"}}}}
	rollback := event.Change{Kind: event.ChangeRepository, Setting: event.SettingRepository, Repository: &event.RepoChange{Git: change.Repository.Git}}
	const id = "p-0123456789ab"
	d := event.MustDraft(event.ProposalCreated, "", event.ProposalCreatedData{ID: id, Pattern: "replans", Subject: "ls", Family: "web", Risk: "low",
		Approvers: 1, RootCause: "replans keep fixing ls", Change: change, Rollback: rollback})
	creds := filepath.Join(dir, "orchestrator.creds")
	auth, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteCreds(creds, root, orch); err != nil {
		t.Fatal(err)
	}
	opts, _, err := natsauth.CredsOptions(creds)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishSigned(context.Background(), js, orch, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the proposal listed", func() bool {
		return strings.Contains(h.run("proposal", "show", id).stdout, "status     pending")
	})
	if r := h.run("proposal", "apply", id); r.code == 0 || !strings.Contains(r.stderr, "not approved: nothing was published") {
		t.Fatalf("apply of a pending proposal = %+v", r)
	}
	if r := h.run("proposal", "approve", id); r.code != 0 {
		t.Fatalf("proposal approve = %+v", r)
	}
	poll.Eventually(t, 20*time.Second, "the proposal approved", func() bool {
		return strings.Contains(h.run("proposal", "show", id).stdout, "status     approved")
	})
	r := h.run("proposal", "apply", id, "--wait")
	if r.code != 0 {
		t.Fatalf("proposal apply --wait = %+v", r)
	}
	var show string
	poll.Eventually(t, 30*time.Second, "the proposal applied", func() bool {
		show = h.run("proposal", "show", id).stdout
		return strings.Contains(show, "status     applied")
	})
	if !strings.Contains(show, "pull req.  https://forge.example/acme/notes/pull/7") || !strings.Contains(show, "git run    ") {
		t.Errorf("proposal show:\n%s", show)
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != mainBefore {
		t.Errorf("the remote's main moved: nothing may merge by itself")
	}
	branches := gitRun(t, remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposal/")
	branch := strings.TrimSpace(branches)
	if !strings.HasPrefix(branch, "proposal/"+id+"/") || strings.Contains(branch, "\n") {
		t.Fatalf("branches on the remote: %q", branches)
	}
	if got := gitRun(t, remote, "show", branch+":notes/planner.md"); got != "plan the form that works the first time\n" {
		t.Errorf("notes/planner.md on %s: %q", branch, got)
	}
	mu.Lock()
	if len(posts) != 1 || posts[0]["base"] != "main" || posts[0]["head"] != branch || !strings.HasPrefix(posts[0]["title"].(string), "proposal "+id) {
		t.Errorf("forge requests %v", posts)
	}
	mu.Unlock()
	if r := h.run("proposal", "apply", id); r.code == 0 || !strings.Contains(r.stderr, "nothing was published") {
		t.Errorf("a second apply = %+v", r)
	}
}
