package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestRevokedGitHolderDoesNotHoldTheRun: when the executor holding a git
// run's worktree is revoked, the run fails with worktree_lost and does
// not wait forever for a git.discard only that executor could run: the
// discard is given up (a revoked credential never signs again), and the
// run finishes, its reason saying what stays on the node.
func TestRevokedGitHolderDoesNotHoldTheRun(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 2, 0)
	git := &event.GitSpec{Repo: "/srv/repo", Base: "main"}
	wt := event.Step{ID: event.GitWorktreeStep, Kind: event.KindGitWorktree, Worktree: true, Git: git}
	fix := event.Step{ID: "fix", Kind: event.KindShell, Run: "make", Worktree: true, DependsOn: []string{wt.ID}}
	f.run("r", wt, fix)
	f.assign("r", wt, 1, "n1")
	f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: wt.ID, Attempt: 1})
	f.add(event.TaskFinished, "r", "n1", event.TaskFinishedData{Step: wt.ID, Attempt: 1, Status: event.TaskSucceeded})
	f.add(event.CredentialRevoked, "", "admin", event.CredentialRevokedData{Kind: "node", ID: "n1", Before: t0, Reason: "stolen"})
	var fin event.RunFinishedData
	for i := 1; i <= 5 && fin.Status == ""; i++ {
		for _, d := range f.decide(t0.Add(time.Duration(i) * time.Second)) {
			if d.Draft.Type == event.TaskAssigned {
				t.Fatalf("assigned to a revoked node: %s", d.Key)
			}
			if d.Draft.Type == event.RunFinished {
				_ = json.Unmarshal(d.Draft.Data, &fin)
			}
		}
	}
	if fin.Status != event.RunFailed || fin.Code != CodeWorktreeLost.Wire() || !strings.Contains(fin.Reason, "revoked") ||
		!strings.Contains(fin.Reason, "git.discard") {
		t.Fatalf("run finished %+v: want failed, worktree_lost, saying the discard was given up", fin)
	}
}
