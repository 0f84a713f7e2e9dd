package event

import (
	"fmt"
	"strings"
)

// Git runs (protocol version 8): a plan with a git block (Plan.Git) works
// in a git worktree of its own, on a branch of its own, on one executor.
// The planner adds two steps to such a plan — GitWorktreeStep first, which
// makes the worktree and the branch, and GitFinishStep last, which pushes
// the branch and records the pull request (pr.opened) — and marks every
// step of the plan Worktree, so that it runs in the worktree. The
// orchestrator gives every step of the run to the executor that made the
// worktree; its compensation (KindGitDiscard) removes the branch and the
// worktree.

// PROpened is a pull request recorded by the executor that pushed its
// branch (PROpenedData). Protocol version 8.
const PROpened Type = "pr.opened"

// Step kinds of git runs. The planner makes them; plans do not name them.
const (
	// KindGitWorktree makes the run's worktree and branch from Git.Base.
	KindGitWorktree StepKind = "git.worktree"
	// KindGitFinish pushes the run's branch (when Git.Push is set),
	// emits pr.opened, opens the pull request through a forge when the
	// executor has one for the remote, and removes the worktree (the
	// branch stays).
	KindGitFinish StepKind = "git.finish"
	// KindGitDiscard compensates a git.worktree step: it removes the
	// run's worktree and its branch, and pushes nothing.
	KindGitDiscard StepKind = "git.discard"
)

// Ids of the steps the planner adds to a git run.
const (
	GitWorktreeStep = "git-worktree"
	GitFinishStep   = "git-finish"
)

// DefaultGitBranch is the branch of a git run whose plan names none:
// "{run}" is replaced by the run id.
const DefaultGitBranch = "agentic/{run}"

// GitSpec is a plan's git block: the repository a run works on and what
// becomes of its branch. Protocol version 8.
type GitSpec struct {
	// Repo is the path of a clone the executor can reach; the run works in
	// a worktree of it, never in its checkout. Exactly one of Repo and URL.
	Repo string `json:"repo,omitempty"`
	// URL is a repository the executor clones (into its own directory)
	// when the plan names no local clone.
	URL string `json:"url,omitempty"`
	// Forge names the forge of the executor's configuration
	// (executor.forges) whose token reaches the remote over https and
	// opens the pull request through the forge's API; a name, never a
	// secret.
	Forge string `json:"forge,omitempty"`
	// Base is the branch the run's branch starts from, and the pull
	// request's base. Never pushed to.
	Base string `json:"base"`
	// Branch is the run's branch; "{run}" in it is replaced by the run id
	// (BranchFor). DefaultGitBranch when empty.
	Branch string `json:"branch,omitempty"`
	// Push is the remote the branch is pushed to on success; empty pushes
	// nothing (the branch stays in the repository).
	Push string `json:"push,omitempty"`
	// PullRequest, when set, asks for a pull request of Branch into Base.
	PullRequest *PullRequestSpec `json:"pull_request,omitempty"`
}

// PullRequestSpec is what a git run's pull request says.
type PullRequestSpec struct {
	// Title is the pull request's title; the plan's goal when empty.
	Title string `json:"title,omitempty"`
	// Draft opens it as a draft.
	Draft bool `json:"draft,omitempty"`
}

// BranchFor is the branch of run: Branch (DefaultGitBranch when empty)
// with "{run}" replaced by the run id.
func (g *GitSpec) BranchFor(run string) string {
	b := g.Branch
	if b == "" {
		b = DefaultGitBranch
	}
	return strings.ReplaceAll(b, "{run}", run)
}

// ValidGitRef reports whether name may be a branch of a git run: the
// rules of git check-ref-format for a branch, stricter where a name could
// be read as an option or a revision expression.
func ValidGitRef(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", what)
	case len(name) > 200:
		return fmt.Errorf("%s is %d bytes long; the limit is 200", what, len(name))
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("%s %q starts with '-': it would read as an option", what, name)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return fmt.Errorf("%s %q: a '/' may only separate two parts", what, name)
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") || strings.Contains(name, ".."):
		return fmt.Errorf("%s %q: it may not end with '.' or '.lock', nor hold '..'", what, name)
	case strings.Contains(name, "@{") || name == "@" || name == "HEAD":
		return fmt.Errorf("%s %q is a revision expression, not a branch", what, name)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("%s %q: a part may not start with '.'", what, name)
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("~^:?*[\\", c) >= 0 {
			return fmt.Errorf("%s %q has %s: use letters, digits and '-', '_', '.', '/'", what, name, describeByte(name, i))
		}
	}
	return nil
}

// PROpenedData is a pull request as recorded by the executor that pushed
// its branch (or, without a push remote, that made it). Protocol
// version 8.
type PROpenedData struct {
	// Step and Attempt are the git.finish attempt that recorded it.
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Node is the executor (the signer).
	Node string `json:"node"`
	// Repo is the repository (the plan's repo or url); Remote the remote
	// the branch was pushed to ("" when none was).
	Repo   string `json:"repo"`
	Remote string `json:"remote,omitempty"`
	// Base and Head are the branches: the pull request merges Head into
	// Base. BaseCommit is the commit Head started from.
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	Head       string `json:"head"`
	// Commits are the run's commits on Head, oldest first.
	Commits []GitCommit `json:"commits,omitempty"`
	// DiffHash is the sha256 (hex) of `git diff --binary` from BaseCommit
	// to Head's last commit, as git printed it.
	DiffHash string `json:"diff_hash"`
	// Validations are how the run's steps other than edits ended, in the
	// order they ran in the worktree.
	Validations []GitValidation `json:"validations,omitempty"`
	// Title and Draft are the pull request's.
	Title string `json:"title"`
	Draft bool   `json:"draft,omitempty"`
	// Forge is the forge the pull request was opened on (its name in the
	// executor's configuration), URL and Number what the forge answered;
	// all empty when no forge is configured for the remote.
	Forge  string `json:"forge,omitempty"`
	URL    string `json:"url,omitempty"`
	Number int    `json:"number,omitempty"`
	// ForgeError says why the forge did not open it (the event still
	// records the pull request: the branch is pushed).
	ForgeError string `json:"forge_error,omitempty"`
}

// GitCommit is one commit of a git run: the edit step it records.
type GitCommit struct {
	ID   string `json:"id"`
	Step string `json:"step"`
	// Subject is the first line of its message.
	Subject string `json:"subject"`
}

// GitValidation is how one validation step of a git run ended.
type GitValidation struct {
	Step     string     `json:"step"`
	Status   TaskStatus `json:"status"`
	ExitCode int        `json:"exit_code,omitempty"`
}
