package improve

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// repoChange writes files to the repository at /srv/notes, pushed to
// origin with a pull request.
func repoChange(files ...event.RepoFile) event.Change {
	return event.Change{Kind: event.ChangeRepository, Setting: event.SettingRepository, Repository: &event.RepoChange{
		Git: event.GitSpec{Repo: "/srv/notes", Base: "main", Push: "origin", PullRequest: &event.PullRequestSpec{}}, Files: files}}
}

// TestRepoForbidden: a repository change is refused unless it pushes its
// branch, writes clean relative paths outside .git within the limits, and
// makes a plan the decoder accepts.
func TestRepoForbidden(t *testing.T) {
	good := event.RepoFile{Path: "notes/planner.md", Content: "plan the form that works\n"}
	if err := Forbidden(repoChange(good)); err != nil {
		t.Fatalf("a valid change refused: %v", err)
	}
	if err := Forbidden(repoChange()); err != nil {
		t.Fatalf("a rollback (no files) refused: %v", err)
	}
	noPush := repoChange(good)
	noPush.Repository.Git.Push = ""
	twoRepos := repoChange(good)
	twoRepos.Repository.Git.URL = "https://forge.example/acme/notes.git"
	badBase := repoChange(good)
	badBase.Repository.Git.Base = "-main"
	bad := map[string]event.Change{
		"no push":      noPush,
		"repo and url": twoRepos,
		"bad base":     badBase,
		"absolute":     repoChange(event.RepoFile{Path: "/etc/passwd", Content: "x"}),
		"dot-dot":      repoChange(event.RepoFile{Path: "../x", Content: "x"}),
		"unclean":      repoChange(event.RepoFile{Path: "a//b", Content: "x"}),
		"git dir":      repoChange(event.RepoFile{Path: "sub/.git/hooks/pre-commit", Content: "x"}),
		"twice":        repoChange(good, good),
		"huge":         repoChange(event.RepoFile{Path: "big", Content: strings.Repeat("x", tuning.MaxRepoFileBytes+1)}),
		"secret":       repoChange(event.RepoFile{Path: "db.env", Content: "mysql -u root -pS3cretPW app\n"}),
	}
	for name, c := range bad {
		if err := Forbidden(c); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: got %v, want a forbidden change", name, err)
		}
	}
}

// TestRepoProposalApplied: an approved repository proposal is applied
// by the git run an operator submits naming it, with exactly its plan
// (a goal naming it with another plan is not its run): the leader emits
// nothing while it runs, proposal.applied with the run and the pull
// request once pr.opened is recorded, and never monitors or reverts it.
// Another whose run fails ends reverted, saying how the run ended.
func TestRepoProposalApplied(t *testing.T) {
	p := plant(t)
	file := event.RepoFile{Path: "notes/planner.md", Content: "plan the form that works\n"}
	for _, id := range []string{"p-repo", "p-fails"} {
		p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: id, Pattern: "manual", Family: "web", Risk: "medium", Approvers: 1,
			RootCause: "the notes are out of date", Change: repoChange(file), Rollback: repoChange()})
		p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id})
	}
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Now: func() time.Time { return p.now }})
	p.feed(l)
	prop, _ := l.Proposal("p-repo")
	text, err := tuning.ProposalPlan(&prop)
	if err != nil {
		t.Fatal(err)
	}
	p.emit(event.GoalSubmitted, "other", event.GoalSubmittedData{Goal: "g", PlanFile: strings.Replace(text, "origin", "elsewhere", 1), Proposal: "p-repo"})
	p.emit(event.GoalSubmitted, "run-1", event.GoalSubmittedData{Goal: "g", PlanFile: text, PlanName: "p-repo.json", Proposal: "p-repo"})
	failsProp, _ := l.Proposal("p-fails")
	failsText, _ := tuning.ProposalPlan(&failsProp)
	p.emit(event.GoalSubmitted, "run-2", event.GoalSubmittedData{Goal: "g", PlanFile: failsText, Proposal: "p-fails"})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); len(got) != 0 {
		t.Fatalf("emitted %v while the runs run, want nothing", got)
	}
	if got, _ := l.Proposal("p-repo"); got.Run != "run-1" {
		t.Fatalf("run %q, want run-1 (the goal with the proposal's plan)", got.Run)
	}
	p.emit(event.PROpened, "run-1", event.PROpenedData{Step: event.GitFinishStep, Attempt: 1, Node: "n1", Repo: "/srv/notes", Remote: "origin",
		Base: "main", Head: "proposal/p-repo/run-1", URL: "https://forge.example/acme/notes/pull/7", Number: 7})
	p.emit(event.RunFinished, "run-1", event.RunFinishedData{Decision: event.Decision{Epoch: 1}, Status: event.RunSucceeded})
	p.emit(event.RunFinished, "run-2", event.RunFinishedData{Decision: event.Decision{Epoch: 1}, Status: event.RunFailed, Reason: "step file-1 failed"})
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	if got := c.types(); !slices.Equal(got, []event.Type{event.ProposalApplied, event.ProposalReverted}) {
		t.Fatalf("emitted %v, want proposal.applied and proposal.reverted", got)
	}
	got, _ := l.Proposal("p-repo")
	if got.Status != StatusApplied || got.PullRequest != "https://forge.example/acme/notes/pull/7" || got.ApplyCheck == nil {
		t.Fatalf("p-repo: status %s, pull request %q", got.Status, got.PullRequest)
	}
	var applied event.ProposalAppliedData
	if err := json.Unmarshal(c.drafts[0].Data, &applied); err != nil || applied.Run != "run-1" || applied.PullRequest != got.PullRequest {
		t.Fatalf("proposal.applied %+v %v", applied, err)
	}
	ended, _ := l.Proposal("p-fails")
	if ended.Status != StatusReverted || ended.Outcome == nil || !strings.Contains(ended.Outcome.Reason, "run-2 failed: step file-1 failed") {
		t.Fatalf("p-fails: status %s outcome %+v", ended.Status, ended.Outcome)
	}
	// Applied, it is not monitored: failures of its family revert nothing.
	step := event.Step{ID: "x", Run: "false"}
	for _, run := range []string{"a", "b", "c", "d", "e", "f"} {
		p.run(run, "web", step)
		p.attempt(run, step, 1, failed(1))
	}
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); len(got) != 2 {
		t.Fatalf("emitted %v after failures of the family, want nothing more", got[2:])
	}
}

// TestRepoSeverity: a repository change's news is of medium severity
// (code a person will review), like step defaults; a template's is low,
// like a note's.
func TestRepoSeverity(t *testing.T) {
	repo := &Proposal{ProposalCreatedData: event.ProposalCreatedData{Change: repoChange()}, Status: StatusApproved}
	tpl := &Proposal{ProposalCreatedData: event.ProposalCreatedData{Change: templateChange("web", webTemplate)}, Status: StatusApproved}
	if got := SeverityOf(repo); got != SeverityMedium {
		t.Errorf("repository change: %s, want medium", got)
	}
	if got := SeverityOf(tpl); got != SeverityLow {
		t.Errorf("template change: %s, want low", got)
	}
}
