package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrPushToBase: the push would write the base branch.
var ErrPushToBase = errors.New("gitwork: refusing to push to the base branch")

// Result is what Finish did: the pull request's facts, before a forge
// saw them.
type Result struct {
	State   State
	Head    string
	Commits []event.GitCommit
	// DiffHash is the sha256 of `git diff --binary BaseCommit Head`.
	DiffHash string
	// Pushed is set when the branch was pushed to spec.Push.
	Pushed bool
	// RemoteURL is the push remote's URL (for a forge to find the
	// repository by).
	RemoteURL string
}

// Finish reads the run's commits and diff, pushes its branch to
// spec.Push (when set) and removes its worktree; the branch stays. env
// is added to git's environment (credentials). A run whose branch is the
// base is refused (ErrPushToBase) before anything is pushed.
func (w *Work) Finish(ctx context.Context, run string, spec event.GitSpec, env map[string]string) (Result, error) {
	defer w.lock(run)()
	st, err := w.Load(run)
	if err != nil {
		return Result{}, err
	}
	if !st.Made {
		return Result{}, fmt.Errorf("%w %s (its making did not finish)", ErrNoWorktree, run)
	}
	if st.Branch == st.Base || st.Branch == spec.Base || strings.TrimPrefix(st.Branch, "refs/heads/") == spec.Base {
		return Result{}, fmt.Errorf("%w %s (run %s)", ErrPushToBase, spec.Base, run)
	}
	res := Result{State: st}
	ref := "refs/heads/" + st.Branch
	head, err := w.git(ctx, st.Repo, nil, "rev-parse", "--verify", ref)
	if err != nil {
		return Result{}, fmt.Errorf("gitwork: run %s: branch %s: %w", run, st.Branch, err)
	}
	res.Head = strings.TrimSpace(head)
	log, err := w.git(ctx, st.Repo, nil, "log", "--reverse", "--format=%H%x1f%s%x1f%(trailers:key=Agentic-Step,valueonly,separator=%x2C)", st.BaseCommit+".."+res.Head)
	if err != nil {
		return Result{}, fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		f := strings.Split(line, "\x1f")
		if len(f) == 3 {
			res.Commits = append(res.Commits, event.GitCommit{ID: f[0], Subject: f[1], Step: strings.TrimSpace(f[2])})
		}
	}
	diff, err := w.git(ctx, st.Repo, nil, "diff", "--binary", st.BaseCommit, res.Head)
	if err != nil {
		return Result{}, fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	sum := sha256.Sum256([]byte(diff))
	res.DiffHash = hex.EncodeToString(sum[:])
	if spec.Push != "" && !st.Finished {
		if err := event.ValidGitRef("remote", spec.Push); err != nil || strings.ContainsAny(spec.Push, "+:") {
			return Result{}, fmt.Errorf("gitwork: push %q is not a remote name", spec.Push)
		}
		url, err := w.git(ctx, st.Repo, nil, "remote", "get-url", "--push", "--", spec.Push)
		if err != nil {
			return Result{}, fmt.Errorf("gitwork: run %s: the repository has no remote %s: %w", run, spec.Push, err)
		}
		res.RemoteURL = strings.TrimSpace(url)
		// An explicit refspec without '+': never forced, never another
		// branch than the run's.
		if _, err := w.git(ctx, st.Repo, env, "push", "--quiet", "--no-verify", "--", spec.Push, ref+":"+ref); err != nil {
			return Result{}, fmt.Errorf("gitwork: run %s: push %s to %s: %w", run, st.Branch, spec.Push, err)
		}
		res.Pushed = true
		st.Pushed = true
	}
	if err := w.removeWorktree(ctx, st); err != nil {
		return Result{}, err
	}
	st.Finished = true
	res.State = st
	return res, w.save(st)
}

// RecordPR records, before it is emitted, the run's pull request and the
// id of the pr.opened event that carries it; once recorded, a later call
// leaves the first record (the pull request is the run's, once).
func (w *Work) RecordPR(run, id string, pr event.PROpenedData) (State, error) {
	defer w.lock(run)()
	st, err := w.Load(run)
	if err != nil {
		return State{}, err
	}
	if st.PR != nil {
		return st, nil
	}
	st.PR, st.PREvent = &pr, id
	return st, w.save(st)
}

// PREmitted records that the run's pr.opened is in the ledger.
func (w *Work) PREmitted(run string) error {
	defer w.lock(run)()
	st, err := w.Load(run)
	if err != nil {
		return err
	}
	st.PREmitted = true
	return w.save(st)
}

// removeWorktree removes the run's worktree (it may be gone already).
func (w *Work) removeWorktree(ctx context.Context, st State) error {
	if _, err := os.Stat(st.Worktree); err == nil {
		if _, err := w.git(ctx, st.Repo, nil, "worktree", "remove", "--force", "--", st.Worktree); err != nil {
			return fmt.Errorf("gitwork: run %s: remove its worktree: %w", st.Run, err)
		}
	}
	if _, err := w.git(ctx, st.Repo, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("gitwork: run %s: %w", st.Run, err)
	}
	return nil
}

// Discard removes the run's worktree and the branch this executor made
// for it, and then its state; nothing is pushed, and a remote is never
// touched. A run with no state here has nothing to discard.
func (w *Work) Discard(ctx context.Context, run string) error {
	defer w.lock(run)()
	st, err := w.Load(run)
	if errors.Is(err, ErrNoWorktree) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := w.removeWorktree(ctx, st); err != nil {
		return err
	}
	// The state was written only once the branch was found absent: a
	// branch of its name is this run's, made or not recorded as made.
	if w.exists(ctx, st.Repo, "refs/heads/"+st.Branch) {
		if _, err := w.git(ctx, st.Repo, nil, "branch", "--quiet", "-D", "--", st.Branch); err != nil {
			return fmt.Errorf("gitwork: run %s: delete branch %s: %w", run, st.Branch, err)
		}
	}
	if err := os.Remove(w.statePath(run)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	return w.pruneClone(ctx, st) // prune.go
}
