package plan

import (
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Git runs (examples/README.md, "Git runs"). A plan's git block makes its run
// work in a git worktree of its own, on a branch of its own:
//
//	git:
//	  repo: /srv/repos/service      # or url: https://…
//	  base: main
//	  branch: agentic/{run}          # the default
//	  push: origin                   # optional
//	  forge: github                  # optional: a forge of the executor's configuration
//	  pull_request: {title: "…", draft: true}   # optional
//
// Normalize adds two steps to such a plan: git-worktree (kind
// git.worktree, idempotent: made again after an interruption, it finishes
// what it had begun), which every step without dependencies depends on, and
// git-finish (kind git.finish), which depends on every step of the plan;
// both carry the git block. Every step of the plan is marked Worktree. The
// plan's own steps keep to the worktree: a cwd or file path must be
// relative and stay inside it. Normalize of a normalized plan removes and
// adds the two steps again, changing nothing.

// Fields of a plan's git block and of its pull_request.
var (
	gitFields = []string{"repo", "url", "forge", "base", "branch", "push", "pull_request"}
	prFields  = []string{"title", "draft"}
)

// gitDraft is a plan's git block as written, with the positions of its
// fields.
type gitDraft struct {
	spec  event.GitSpec
	at    pos
	field map[string]pos
}

// pos returns the position of the named field of the git block.
func (g *gitDraft) pos(name string) pos {
	if p, ok := g.field[name]; ok {
		return p
	}
	return g.at.child(name)
}

// decodeGit decodes the plan's git block.
func (w *walker) decodeGit(d *draft, n *yaml.Node, p pos) {
	g := &gitDraft{at: p, field: map[string]pos{}}
	d.git = g
	entries, ok := w.mapping(n, p, gitFields)
	if !ok {
		g.field["bad"] = p
		return
	}
	for _, e := range entries {
		fp := at(e.val, p.child(e.name).path)
		g.field[e.name] = fp
		var v string
		switch e.name {
		case "pull_request":
			g.spec.PullRequest = w.decodePullRequest(e.val, fp)
			continue
		default:
			v, _ = w.str(e.val, fp)
		}
		switch e.name {
		case "repo":
			g.spec.Repo = v
		case "url":
			g.spec.URL = v
		case "forge":
			g.spec.Forge = v
		case "base":
			g.spec.Base = v
		case "branch":
			g.spec.Branch = v
		case "push":
			g.spec.Push = v
		}
	}
}

// decodePullRequest decodes a git block's pull_request; nil when it is not
// a mapping (reported).
func (w *walker) decodePullRequest(n *yaml.Node, p pos) *event.PullRequestSpec {
	entries, ok := w.mapping(n, p, prFields)
	if !ok {
		return nil
	}
	pr := &event.PullRequestSpec{}
	for _, e := range entries {
		fp := at(e.val, p.child(e.name).path)
		switch e.name {
		case "title":
			pr.Title, _ = w.str(e.val, fp)
		case "draft":
			pr.Draft, _ = w.boolean(e.val, fp)
		}
	}
	return pr
}

// gitFromPlan is the draft of a plan's git block built in code; the steps
// the planner adds to git runs are left out of d (compile adds them
// again), and so are the dependencies on them.
func gitFromPlan(p *event.Plan, d *draft) {
	if p.Git == nil {
		return
	}
	spec := *p.Git
	if spec.PullRequest != nil {
		pr := *spec.PullRequest
		spec.PullRequest = &pr
	}
	d.git = &gitDraft{spec: spec, at: pos{path: "git"}, field: map[string]pos{}}
	kept := d.steps[:0]
	for _, s := range d.steps {
		if isGitStep(s.step) {
			continue
		}
		s.deps = slices.DeleteFunc(s.deps, func(r ref) bool { return r.id == event.GitWorktreeStep })
		s.step.Worktree = false
		kept = append(kept, s)
	}
	d.steps = kept
}

// isGitStep reports whether st is one of the steps Normalize adds to a git
// run.
func isGitStep(st event.Step) bool {
	return (st.Kind == event.KindGitWorktree && st.ID == event.GitWorktreeStep) ||
		(st.Kind == event.KindGitFinish && st.ID == event.GitFinishStep)
}

// sampleRun stands for the run id when a branch template is checked.
const sampleRun = "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d"

// checkGit reports the problems of the plan's git block and of its steps
// as steps of a git run, and, when there are none, adds the git steps to
// d (and their ids to steps).
func checkGit(d *draft, ps *problems, steps map[string]int) {
	g := d.git
	if g == nil {
		for _, s := range d.steps {
			if s.step.Worktree || s.step.Git != nil {
				ps.add(s.at, "step %s is marked as a step of a git run (worktree, git), but the plan has no git block: the planner marks the steps of plans that have one", s.step.ID)
			}
		}
		return
	}
	if _, bad := g.field["bad"]; bad {
		return
	}
	before := len(ps.list)
	s := &g.spec
	switch {
	case s.Repo == "" && s.URL == "":
		ps.add(g.at, "git needs repo (the path of a clone the executor can reach) or url (a repository it clones)")
	case s.Repo != "" && s.URL != "":
		ps.add(g.pos("url"), "git has both repo and url: give one")
	case s.Repo != "" && !filepath.IsAbs(s.Repo):
		ps.add(g.pos("repo"), "repo %q must be an absolute path (the executor's, not the planner's working directory)", s.Repo)
	case s.Repo != "" && filepath.Clean(s.Repo) != s.Repo:
		ps.add(g.pos("repo"), "repo %q is not a clean path: write %q", s.Repo, filepath.Clean(s.Repo))
	case s.URL != "":
		checkGitURL(ps, g.pos("url"), s.URL)
	}
	if s.Forge != "" && event.ValidStepID(s.Forge) != nil {
		ps.add(g.pos("forge"), "forge %q must be the name of a forge in the executor's configuration (letters, digits, '_', '-', '.'), never a secret", s.Forge)
	}
	checkSecret(ps, g.pos("url"), "url", s.URL)
	if s.Base == "" {
		ps.add(g.pos("base"), "git needs base: the branch the run's branch starts from (e.g. base: main)")
	} else if err := event.ValidGitRef("base", s.Base); err != nil {
		ps.add(g.pos("base"), "%v", err)
	}
	branch := s.BranchFor(sampleRun)
	if err := event.ValidGitRef("branch", branch); err != nil {
		ps.add(g.pos("branch"), "%v", err)
	} else if s.Base != "" && (branch == s.Base || strings.TrimPrefix(branch, "refs/heads/") == s.Base) {
		ps.add(g.pos("branch"), "branch %q is the base branch: a git run never commits or pushes to its base; use a branch of its own, e.g. %s", s.Branch, event.DefaultGitBranch)
	} else if s.Branch != "" && !strings.Contains(s.Branch, "{run}") {
		ps.add(g.pos("branch"), "branch %q does not hold {run}: two runs of the plan would share one branch; add {run} (e.g. %s)", s.Branch, event.DefaultGitBranch)
	}
	if s.Push != "" && (event.ValidStepID(s.Push) != nil || strings.HasPrefix(s.Push, "-")) {
		ps.add(g.pos("push"), "push %q must name a remote of the repository (letters, digits, '_', '-', '.')", s.Push)
	}
	if s.Push != "" && strings.ContainsAny(s.Push, "+:") {
		ps.add(g.pos("push"), "push names a remote, never a refspec: a git run cannot force-push or push to another branch")
	}
	if pr := s.PullRequest; pr != nil {
		checkSecret(ps, g.pos("pull_request"), "title", pr.Title)
		if len(pr.Title) > 256 {
			ps.add(g.pos("pull_request"), "pull_request.title is %d bytes; the limit is 256", len(pr.Title))
		}
		if strings.ContainsAny(pr.Title, "\n\r") {
			ps.add(g.pos("pull_request"), "pull_request.title must be one line")
		}
	}
	for _, st := range d.steps {
		checkGitStep(ps, st)
		if st.step.Git != nil {
			ps.add(st.at, "step %s carries a git block: only the steps the planner adds to a git run do", st.step.ID)
		}
	}
	if len(ps.list) > before {
		return
	}
	addGitSteps(d, steps)
}

// checkGitURL reports a url a git run cannot clone from: only https, ssh
// and file URLs (and scp-like user@host:path) are taken; other schemes
// (ext::, fd::) can run programs.
func checkGitURL(ps *problems, at pos, raw string) {
	if strings.HasPrefix(raw, "-") {
		ps.add(at, "url %q starts with '-': it would read as an option", raw)
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if i := strings.IndexByte(raw, ':'); i > 0 && strings.Contains(raw[:i], "@") && !strings.Contains(raw[:i], "/") {
			return // scp-like: git@host:org/repo.git
		}
		ps.add(at, "url %q is not a URL git can clone from (https://…, ssh://…, file://… or user@host:path)", raw)
		return
	}
	switch u.Scheme {
	case "https", "ssh", "file":
	default:
		ps.add(at, "url %q: scheme %s is not taken; use https, ssh or file", raw, u.Scheme)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			ps.add(at, "url holds a password: name the forge whose token reaches it (forge: NAME) instead")
		}
	}
}

// checkGitStep reports what a step of a git run may not do: leave the
// worktree (an absolute or escaping cwd or file path), or take an id the
// planner gives its own steps.
func checkGitStep(ps *problems, s *draftStep) {
	st := &s.step
	if st.ID == event.GitWorktreeStep || st.ID == event.GitFinishStep {
		ps.add(s.pos("id"), "step id %q is taken by the step the planner adds to a git run; rename the step", st.ID)
	}
	inside := func(field, p string) {
		if p == "" {
			return
		}
		clean := path.Clean(filepath.ToSlash(p))
		if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
			ps.add(s.pos(field), "%s %q leaves the run's worktree: in a git run it must be relative to the repository's root and stay inside it", field, p)
		}
	}
	inside("cwd", st.Cwd)
	inside("path", st.Path)
}

// addGitSteps adds the git steps to a checked draft: git-worktree before
// every step without dependencies, git-finish after every step.
func addGitSteps(d *draft, steps map[string]int) {
	spec := d.git.spec
	at := d.git.at
	all := make([]ref, 0, len(d.steps))
	for _, s := range d.steps {
		s.step.Worktree = true
		if len(s.deps) == 0 {
			s.deps = []ref{{id: event.GitWorktreeStep, at: at}}
		}
		all = append(all, ref{id: s.step.ID, at: at})
	}
	wt := &draftStep{at: at, step: event.Step{ID: event.GitWorktreeStep, Title: "make the run's worktree and branch",
		Kind: event.KindGitWorktree, Worktree: true, Idempotent: true, Git: gitCopy(spec)}}
	fin := &draftStep{at: at, deps: all, step: event.Step{ID: event.GitFinishStep, Title: "push the branch and record the pull request",
		Kind: event.KindGitFinish, Worktree: true, Git: gitCopy(spec)}}
	d.steps = append([]*draftStep{wt}, append(d.steps, fin)...)
	for id := range steps {
		steps[id]++
	}
	steps[event.GitWorktreeStep] = 0
	steps[event.GitFinishStep] = len(d.steps) - 1
}

// gitCopy returns a copy of spec that shares nothing with it.
func gitCopy(spec event.GitSpec) *event.GitSpec {
	if spec.PullRequest != nil {
		pr := *spec.PullRequest
		spec.PullRequest = &pr
	}
	return &spec
}
