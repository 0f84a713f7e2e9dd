package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Exec runs git with args (Args is prepended by the caller's Exec, see
// Args) in dir with env added to the step environment, and returns its
// standard output; a non-zero exit is an error that carries git's words.
type Exec func(ctx context.Context, dir string, env map[string]string, args ...string) (string, error)

// Args are the options every git call starts with: hooks, fsmonitor and
// the ext transport off, no signing, a fixed identity (name, email).
func Args(name, email string) []string {
	return []string{"git",
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "protocol.ext.allow=never",
		"-c", "commit.gpgSign=false",
		"-c", "tag.gpgSign=false",
		"-c", "user.name=" + name,
		"-c", "user.email=" + email,
	}
}

// Env is the environment every git call runs with: no system or global
// configuration, no prompt for credentials.
func Env() map[string]string {
	return map[string]string{
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_ASKPASS":         "",
		"SSH_ASKPASS":         "",
	}
}

// Config configures a Work.
type Config struct {
	// Dir holds the worktrees (Dir/<run>) and the clones of url runs
	// (Dir/clones/<hash>): the step user writes there.
	Dir string
	// StateDir holds each run's state file, written by the executor.
	StateDir string
	// Git runs git (as the step user).
	Git Exec
	// MkdirAs makes a directory as the step user (nil: os.MkdirAll).
	MkdirAs func(dir string) error
}

// Work keeps the worktrees of git runs. Its methods may be called
// concurrently: those on one run take turns (a lock per run).
type Work struct {
	cfg   Config
	locks sync.Map // run → *sync.Mutex
}

// lock takes run's lock and returns its unlock.
func (w *Work) lock(run string) func() {
	m, _ := w.locks.LoadOrStore(run, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// New returns a Work; it touches nothing.
func New(cfg Config) *Work { return &Work{cfg: cfg} }

// ErrNoWorktree: this executor holds no worktree for the run.
var ErrNoWorktree = errors.New("gitwork: no worktree for the run on this executor")

// State is what the executor keeps of one run's worktree.
type State struct {
	Run string `json:"run"`
	// Origin is the plan's repo or url; Repo the repository the worktree
	// belongs to (the plan's repo, or the executor's clone of url).
	Origin string `json:"origin"`
	Repo   string `json:"repo"`
	// Worktree is the worktree's directory.
	Worktree   string `json:"worktree"`
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit,omitempty"`
	// Made is set once `git worktree add -b` made the branch and the
	// worktree.
	Made bool `json:"made"`
	// Validations are the run's other steps as they ended here.
	Validations []event.GitValidation `json:"validations,omitempty"`
	// Finished is set once Finish removed the worktree.
	Finished bool `json:"finished,omitempty"`
	// PR is the run's pull request as it was recorded (RecordPR) before
	// its pr.opened was emitted, under the event id PREvent; PREmitted
	// is set once the ledger took it. A git.finish attempted again
	// emits the same event (its id makes the ledger keep one) or, once
	// emitted, nothing: one pr.opened per run.
	PR        *event.PROpenedData `json:"pr,omitempty"`
	PREvent   string              `json:"pr_event,omitempty"`
	PREmitted bool                `json:"pr_emitted,omitempty"`
	// Pushed is set once Finish pushed the branch.
	Pushed bool `json:"pushed,omitempty"`
	// EndedAt is when the run ended here (End); the sweep removes the
	// state EndedKeep later.
	EndedAt time.Time `json:"ended_at,omitzero"`
}

func (w *Work) statePath(run string) string { return filepath.Join(w.cfg.StateDir, run+".json") }

// Load returns the run's state; ErrNoWorktree when there is none.
func (w *Work) Load(run string) (State, error) {
	if err := event.ValidRunID(run); err != nil {
		return State{}, fmt.Errorf("gitwork: %w", err)
	}
	b, err := os.ReadFile(w.statePath(run))
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, fmt.Errorf("%w %s", ErrNoWorktree, run)
	}
	if err != nil {
		return State{}, fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("gitwork: run %s: state file %s: %w", run, w.statePath(run), err)
	}
	return st, nil
}

// save writes st durably (a temporary file synced, then renamed).
func (w *Work) save(st State) error {
	if err := os.MkdirAll(w.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("gitwork: state dir: %w", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	p := w.statePath(st.Run)
	f, err := os.CreateTemp(w.cfg.StateDir, st.Run+".*.tmp")
	if err != nil {
		return fmt.Errorf("gitwork: run %s: %w", st.Run, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("gitwork: run %s: write state: %w", st.Run, err)
	}
	return nil
}

// git runs git in dir with the fixed environment and env.
func (w *Work) git(ctx context.Context, dir string, env map[string]string, args ...string) (string, error) {
	all := Env()
	for k, v := range env {
		all[k] = v
	}
	out, err := w.cfg.Git(ctx, dir, all, args...)
	if err != nil {
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}

// exists reports whether rev names a commit in repo.
func (w *Work) exists(ctx context.Context, repo, ref string) bool {
	_, err := w.git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", ref)
	return err == nil
}

// Create makes the run's worktree on a new branch from spec.Base and
// returns its state. env is added to git's environment (credentials of a
// url). It is idempotent: a worktree this executor made for the run is
// returned as it is.
func (w *Work) Create(ctx context.Context, run string, spec event.GitSpec, env map[string]string) (State, error) {
	defer w.lock(run)()
	if st, err := w.Load(run); err == nil && !st.Finished {
		if st.Made {
			return st, nil
		}
		return w.resume(ctx, st)
	} else if err != nil && !errors.Is(err, ErrNoWorktree) {
		return State{}, err
	}
	branch := spec.BranchFor(run)
	if err := event.ValidGitRef("branch", branch); err != nil {
		return State{}, fmt.Errorf("gitwork: %w", err)
	}
	if err := event.ValidGitRef("base", spec.Base); err != nil {
		return State{}, fmt.Errorf("gitwork: %w", err)
	}
	if branch == spec.Base {
		return State{}, fmt.Errorf("gitwork: branch %s is the base branch: a git run never works on its base", branch)
	}
	st := State{Run: run, Origin: spec.Repo, Repo: spec.Repo, Branch: branch, Base: spec.Base,
		Worktree: filepath.Join(w.cfg.Dir, run)}
	if err := w.mkdir(w.cfg.Dir); err != nil {
		return State{}, err
	}
	if spec.URL != "" {
		repo, err := w.clone(ctx, spec.URL, env)
		if err != nil {
			return State{}, err
		}
		st.Origin, st.Repo = spec.URL, repo
	}
	fi, err := os.Stat(st.Repo)
	if err != nil || !fi.IsDir() {
		return State{}, fmt.Errorf("gitwork: repo %s: not a directory this executor can reach (%v)", st.Repo, err)
	}
	base, err := w.git(ctx, st.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+spec.Base+"^{commit}")
	if err != nil {
		return State{}, fmt.Errorf("gitwork: repo %s has no branch %s to start from: %w", st.Repo, spec.Base, err)
	}
	st.BaseCommit = strings.TrimSpace(base)
	if w.exists(ctx, st.Repo, "refs/heads/"+branch) {
		return State{}, fmt.Errorf("gitwork: repo %s already has a branch %s: a git run works on a branch of its own (remove it, or name another branch)", st.Repo, branch)
	}
	if err := w.save(st); err != nil { // the branch is known before it exists
		return State{}, err
	}
	if _, err := w.git(ctx, st.Repo, nil, "worktree", "add", "--quiet", "-b", branch, "--", st.Worktree, st.BaseCommit); err != nil {
		return State{}, fmt.Errorf("gitwork: make the worktree of run %s: %w", run, err)
	}
	st.Made = true
	if err := w.save(st); err != nil {
		return State{}, err
	}
	return st, nil
}

// resume finishes a Create interrupted after it recorded the run's
// branch (which it had found absent): what exists of the branch and the
// worktree is this run's, and the rest is made.
func (w *Work) resume(ctx context.Context, st State) (State, error) {
	var err error
	switch _, statErr := os.Stat(st.Worktree); {
	case !w.exists(ctx, st.Repo, "refs/heads/"+st.Branch):
		_, err = w.git(ctx, st.Repo, nil, "worktree", "add", "--quiet", "-b", st.Branch, "--", st.Worktree, st.BaseCommit)
	case statErr != nil:
		_, err = w.git(ctx, st.Repo, nil, "worktree", "add", "--quiet", "--", st.Worktree, st.Branch)
	}
	if err != nil {
		return State{}, fmt.Errorf("gitwork: make the worktree of run %s again: %w", st.Run, err)
	}
	st.Made = true
	if err := w.save(st); err != nil {
		return State{}, err
	}
	return st, nil
}

// clone makes (or updates) the executor's bare clone of url and returns
// its path.
func (w *Work) clone(ctx context.Context, url string, env map[string]string) (string, error) {
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(w.cfg.Dir, "clones", hex.EncodeToString(sum[:8])+".git")
	if _, err := os.Stat(dir); err == nil {
		// No --prune: the branches of the runs that work in this clone
		// exist only here until pushed, and a prune would delete them.
		if _, err := w.git(ctx, dir, env, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*"); err != nil {
			return "", fmt.Errorf("gitwork: fetch %s: %w", url, err)
		}
		return dir, nil
	}
	if err := w.mkdir(filepath.Dir(dir)); err != nil {
		return "", err
	}
	if _, err := w.git(ctx, w.cfg.Dir, env, "clone", "--quiet", "--bare", "--", url, dir); err != nil {
		return "", fmt.Errorf("gitwork: clone %s: %w", url, err)
	}
	return dir, nil
}

func (w *Work) mkdir(dir string) error {
	mk := w.cfg.MkdirAs
	if mk == nil {
		mk = func(d string) error { return os.MkdirAll(d, 0o755) }
	}
	if err := mk(dir); err != nil {
		return fmt.Errorf("gitwork: make %s: %w", dir, err)
	}
	return nil
}

// Commit commits everything the run's worktree holds that differs from
// its last commit, with message subject and trailers (name → value, in
// the order given), and returns the commit's id; "" when nothing changed.
func (w *Work) Commit(ctx context.Context, run, subject string, trailers [][2]string) (string, error) {
	defer w.lock(run)()
	st, err := w.Load(run)
	if err != nil {
		return "", err
	}
	if _, err := w.git(ctx, st.Worktree, nil, "add", "--all", "--", "."); err != nil {
		return "", fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	status, err := w.git(ctx, st.Worktree, nil, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "", fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	if strings.TrimSpace(status) == "" {
		return "", nil
	}
	var t strings.Builder
	for _, kv := range trailers {
		fmt.Fprintf(&t, "%s: %s\n", kv[0], kv[1])
	}
	args := []string{"commit", "--quiet", "--no-verify", "-m", oneLine(subject)}
	if t.Len() > 0 {
		args = append(args, "-m", t.String())
	}
	if _, err := w.git(ctx, st.Worktree, nil, args...); err != nil {
		return "", fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	id, err := w.git(ctx, st.Worktree, nil, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("gitwork: run %s: %w", run, err)
	}
	return strings.TrimSpace(id), nil
}

// oneLine is s on one line, bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// Validated records how a step other than an edit ended in the run's
// worktree (pr.opened's validations).
func (w *Work) Validated(run string, v event.GitValidation) error {
	defer w.lock(run)()
	st, err := w.Load(run)
	if err != nil {
		return err
	}
	for i := range st.Validations {
		if st.Validations[i].Step == v.Step {
			st.Validations = append(st.Validations[:i], st.Validations[i+1:]...)
			break
		}
	}
	st.Validations = append(st.Validations, v)
	return w.save(st)
}
