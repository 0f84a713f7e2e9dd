package tuning

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// Limits of a repository change.
const (
	// MaxRepoFiles bounds the files one change writes.
	MaxRepoFiles = 20
	// MaxRepoFileBytes bounds one file's content.
	MaxRepoFileBytes = 64 << 10
	// MaxRepoBytes bounds all of a change's content (a proposal carries it
	// in one event).
	MaxRepoBytes = 256 << 10
)

// RepoBranch is the branch of a repository proposal's runs when its git
// block names none ("{run}" is the run id: the plan check asks for it).
func RepoBranch(proposal string) string { return "proposal/" + proposal + "/{run}" }

// RepoPlan is the plan file (JSON) that applies repository change rc of
// proposal id: rc's git block (branch RepoBranch when it names none, the
// pull request titled after the proposal when it names no title), a
// step making the files' directories when they are not the root
// (mkdir -p: a file.write needs its directory), and one file.write step
// per file, each after the one before (a commit each). Deterministic:
// every fold compares a goal's plan file with it.
func RepoPlan(id, goal string, rc *event.RepoChange) (string, error) {
	type step struct {
		ID        string   `json:"id"`
		Title     string   `json:"title"`
		Run       string   `json:"run,omitempty"`
		Path      string   `json:"path,omitempty"`
		Content   string   `json:"content,omitempty"`
		DependsOn []string `json:"depends_on,omitempty"`
	}
	g := rc.Git
	if g.Branch == "" {
		g.Branch = RepoBranch(id)
	}
	if g.PullRequest != nil && g.PullRequest.Title == "" {
		pr := *g.PullRequest
		pr.Title = "proposal " + id + ": " + goal
		g.PullRequest = &pr
	}
	doc := struct {
		Goal  string        `json:"goal"`
		Git   event.GitSpec `json:"git"`
		Steps []step        `json:"steps"`
	}{Goal: "proposal " + id + ": " + goal, Git: g}
	var dirs []string
	for _, f := range rc.Files {
		if d := path.Dir(f.Path); d != "." && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) > 0 {
		slices.Sort(dirs)
		run := "mkdir -p --"
		for _, d := range dirs {
			run += " '" + strings.ReplaceAll(d, "'", `'\''`) + "'"
		}
		doc.Steps = append(doc.Steps, step{ID: "dirs", Title: "make the files' directories", Run: run})
	}
	for i, f := range rc.Files {
		s := step{ID: fmt.Sprintf("file-%d", i+1), Title: "write " + f.Path, Path: f.Path, Content: f.Content}
		if n := len(doc.Steps); n > 0 {
			s.DependsOn = []string{doc.Steps[n-1].ID}
		}
		doc.Steps = append(doc.Steps, s)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("repository change of proposal %s: %w", id, err)
	}
	return string(b) + "\n", nil
}

// ProposalPlan is RepoPlan of p's change, the goal its root cause.
func ProposalPlan(p *Proposal) (string, error) {
	if p.Change.Repository == nil {
		return "", fmt.Errorf("proposal %s changes no repository", p.ID)
	}
	return RepoPlan(p.ID, p.RootCause, p.Change.Repository)
}

// checkRepo is Forbidden's check of a repository change: a git block
// that pushes its branch to a remote (a pull request is how a person
// sees it), never to its base; files with a relative, clean path outside
// .git, within the limits; and a plan (RepoPlan) the plan decoder
// accepts. A change with no files is a rollback's: nothing to write.
func checkRepo(rc *event.RepoChange) error {
	g := rc.Git
	if (g.Repo == "") == (g.URL == "") {
		return fmt.Errorf("%w: a repository change names exactly one of git.repo and git.url", ErrForbidden)
	}
	if err := event.ValidGitRef("git.base", g.Base); err != nil {
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	if strings.TrimSpace(g.Push) == "" {
		return fmt.Errorf("%w: a repository change pushes its branch (git.push): a person reviews it as a pull request", ErrForbidden)
	}
	if len(rc.Files) > MaxRepoFiles {
		return fmt.Errorf("%w: a repository change writes %d files, at most %d", ErrForbidden, len(rc.Files), MaxRepoFiles)
	}
	total := 0
	var seen []string
	for _, f := range rc.Files {
		p := f.Path
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == ".." || strings.Contains(p, "\\") {
			return fmt.Errorf("%w: file %q: want a clean path relative to the repository's root", ErrForbidden, p)
		}
		if strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return fmt.Errorf("%w: file %q: a path holds no control character", ErrForbidden, p)
		}
		if slices.Contains(strings.Split(p, "/"), ".git") {
			return fmt.Errorf("%w: file %q is under .git", ErrForbidden, p)
		}
		if slices.Contains(seen, p) {
			return fmt.Errorf("%w: file %q is written twice", ErrForbidden, p)
		}
		seen = append(seen, p)
		if len(f.Content) > MaxRepoFileBytes {
			return fmt.Errorf("%w: file %q: %d bytes, at most %d", ErrForbidden, p, len(f.Content), MaxRepoFileBytes)
		}
		total += len(f.Content)
	}
	if total > MaxRepoBytes {
		return fmt.Errorf("%w: a repository change writes %d bytes, at most %d", ErrForbidden, total, MaxRepoBytes)
	}
	if len(rc.Files) == 0 {
		return nil
	}
	text, err := RepoPlan("check", "check", rc)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	if _, err := plan.Parse("repository-change.json", []byte(text)); err != nil {
		return fmt.Errorf("%w: the repository change is no valid git plan: %w", ErrForbidden, err)
	}
	return nil
}

// repoGoal links a goal.submitted naming an approved repository
// proposal to it: when the goal's plan file is exactly the proposal's
// (ProposalPlan) and no run applies it yet.
func (s *State) repoGoal(ev event.Event) bool {
	// Most goals name no proposal: do not decode their plan files.
	if !bytes.Contains(ev.Data, []byte(`"proposal"`)) {
		return false
	}
	var d event.GoalSubmittedData
	if ev.Decode(&d) != nil || d.Proposal == "" {
		return false
	}
	p := s.Proposals[d.Proposal]
	if p == nil || p.Status != StatusApproved || p.Change.Kind != event.ChangeRepository || p.Run != "" {
		return false
	}
	want, err := ProposalPlan(p)
	if err != nil || d.PlanFile != want {
		return false
	}
	p.Run, p.RunSeq = ev.Run, ev.Seq
	if s.Runs == nil {
		s.Runs = map[string]string{}
	}
	s.Runs[ev.Run] = p.ID
	return true
}

// repoPR records the pull request of a repository proposal's run: its
// change is then in force (as far as the loop goes: a person merges).
func (s *State) repoPR(ev event.Event) bool {
	p := s.Proposals[s.Runs[ev.Run]]
	var d event.PROpenedData
	if p == nil || p.ChangeSeq != 0 || ev.Decode(&d) != nil {
		return false
	}
	p.ChangeSeq = ev.Seq
	p.PullRequest = d.URL
	if p.PullRequest == "" {
		p.PullRequest = d.Remote + ":" + d.Head
	}
	return true
}

// repoRunEnd records how a repository proposal's run ended when it
// opened no pull request.
func (s *State) repoRunEnd(ev event.Event) bool {
	id, ok := s.Runs[ev.Run]
	if !ok {
		return false
	}
	delete(s.Runs, ev.Run)
	p := s.Proposals[id]
	var d event.RunFinishedData
	if p == nil || p.ChangeSeq != 0 || ev.Decode(&d) != nil || d.Status == event.RunSucceeded {
		return false
	}
	p.RunFailed = fmt.Sprintf("run %s %s: %s", ev.Run, d.Status, d.Reason)
	return true
}
