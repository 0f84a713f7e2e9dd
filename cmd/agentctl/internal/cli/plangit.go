package cli

import (
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// fileGit is a plan's git block as a plan file writes it.
type fileGit struct {
	Repo        string           `yaml:"repo,omitempty"`
	URL         string           `yaml:"url,omitempty"`
	Forge       string           `yaml:"forge,omitempty"`
	Base        string           `yaml:"base"`
	Branch      string           `yaml:"branch,omitempty"`
	Push        string           `yaml:"push,omitempty"`
	PullRequest *filePullRequest `yaml:"pull_request,omitempty,flow"`
}

type filePullRequest struct {
	Title string `yaml:"title,omitempty"`
	Draft bool   `yaml:"draft,omitempty"`
}

// gitPlanFile returns, for a git run's plan, its git block as a plan file
// writes it and the plan without what the planner added (the git steps,
// the dependencies on them, the worktree marks), which the planner adds
// again when it reads the file; for any other plan, nil and p.
func gitPlanFile(p event.Plan) (*fileGit, event.Plan) {
	if p.Git == nil {
		return nil, p
	}
	g := &fileGit{Repo: p.Git.Repo, URL: p.Git.URL, Forge: p.Git.Forge, Base: p.Git.Base, Branch: p.Git.Branch, Push: p.Git.Push}
	if pr := p.Git.PullRequest; pr != nil {
		g.PullRequest = &filePullRequest{Title: pr.Title, Draft: pr.Draft}
	}
	var steps []event.Step
	for _, s := range p.Steps {
		if (s.Kind == event.KindGitWorktree && s.ID == event.GitWorktreeStep) || (s.Kind == event.KindGitFinish && s.ID == event.GitFinishStep) {
			continue
		}
		s.DependsOn = slices.DeleteFunc(slices.Clone(s.DependsOn), func(id string) bool { return id == event.GitWorktreeStep })
		s.Worktree, s.Git = false, nil
		steps = append(steps, s)
	}
	p.Steps = steps
	return g, p
}
