package executor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// TestGitFinishRetryRecordsOnePullRequest: a git.finish attempted again
// after it succeeded (its task.finished lost, its node restarted) ends
// succeeded and records no second pr.opened: the pull request is the
// run's, recorded once.
func TestGitFinishRetryRecordsOnePullRequest(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	ref := led.refs[1]
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Safety.Policies = APIPolicies(led.client)
		c.Git.Dir = filepath.Join(h.work, "git")
	})
	spec := &event.GitSpec{Repo: gitRepo(t), Base: "main", Branch: "agentic/r1"}
	h.assignJudged("exec-1", "r1", event.Step{ID: event.GitWorktreeStep, Kind: event.KindGitWorktree, Worktree: true, Git: spec}, ref, "")
	if f := result(t, rec, event.GitWorktreeStep); f.Status != event.TaskSucceeded {
		t.Fatalf("git-worktree: %+v", f)
	}
	finish := event.Step{ID: event.GitFinishStep, Kind: event.KindGitFinish, Worktree: true, Git: spec}
	for attempt := 1; attempt <= 2; attempt++ {
		d := event.MustDraft(event.TaskAssigned, "r1", event.TaskAssignedData{
			Decision: event.Decision{Epoch: 1}, Attempt: attempt, Node: "exec-1", Step: finish, Policy: ref})
		d.Target = "exec-1"
		h.publish(d)
		poll.Eventually(t, 20*time.Second, "git-finish attempt finished", func() bool { return len(rec.finished(event.GitFinishStep)) == attempt })
		if f := rec.finished(event.GitFinishStep)[attempt-1]; f.Status != event.TaskSucceeded {
			t.Fatalf("git-finish attempt %d: %+v", attempt, f)
		}
	}
	if n := rec.count(event.PROpened); n != 1 {
		t.Fatalf("%d pr.opened for one run, want 1", n)
	}
}

// count is how many drafts of type typ the executor emitted.
func (r *recorder) count(typ event.Type) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.drafts {
		if d.Type == typ {
			n++
		}
	}
	return n
}
