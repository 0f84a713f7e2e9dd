package executor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/roles/executor/forge"
	"github.com/agentic-dev/agentic/roles/executor/gitwork"
	"github.com/agentic-dev/agentic/roles/executor/runner"
)

// Git runs (examples/README.md, "Git runs"). The steps of a plan with a git
// block are marked Worktree and run here, on the executor that made the
// run's worktree (the orchestrator pins them to it):
//
//   - git.worktree makes the worktree and the run's branch from the base
//     (gitwork.Create), under GitConfig.Dir;
//   - every other step runs with its working directory inside the
//     worktree; a file edit that succeeds is committed there, "fix(plan):
//     <title>" with the run, the step and its task.finished event's id as
//     trailers (Agentic-Run, Agentic-Step, Agentic-Event); how the other
//     steps end is kept as the pull request's validations;
//   - git.finish pushes the branch (when the plan names a push remote),
//     emits pr.opened, opens the pull request on the forge the plan's
//     forge names (when this executor has it), and removes the
//     worktree;
//   - git.discard, the compensation of git.worktree, removes the worktree
//     and the branch, and pushes nothing.
//
// git runs through the runner as the step user, with an argument vector
// and no shell, system and global configuration and hooks off (gitwork).

// GitConfig configures the git runs of an executor.
type GitConfig struct {
	// Dir is where worktrees (and clones of url runs) live; empty means
	// the "agentic-git" directory of the runner's default working
	// directory. The step user writes there.
	Dir string
	// Forges are the forges pull requests may be opened on, by the name a
	// plan's git.forge gives; their tokens are files.
	Forges map[string]forge.Forge
}

// gitWork holds the executor's gitwork.Work, made at first use.
type gitWork struct {
	once sync.Once
	w    *gitwork.Work
}

// GitStateDir is where an executor whose local state is in stateDir
// keeps the state of its git runs: "<stateDir>-git".
func GitStateDir(stateDir string) string { return filepath.Clean(stateDir) + "-git" }

// isGitKind reports whether k is a kind of the git steps the planner and
// the orchestrator make.
func isGitKind(k event.StepKind) bool {
	return k == event.KindGitWorktree || k == event.KindGitFinish || k == event.KindGitDiscard
}

// git returns the executor's worktrees, as the default user of steps.
func (e *Executor) git() *gitwork.Work {
	e.gitw.once.Do(func() {
		dir := e.cfg.Git.Dir
		if dir == "" {
			def := e.cfg.Runner.DefaultCwd
			if def == "" {
				def = runner.DefaultOptions().DefaultCwd
			}
			dir = filepath.Join(def, "agentic-git")
		}
		e.gitw.w = gitwork.New(gitwork.Config{Dir: dir, StateDir: GitStateDir(e.cfg.StateDir), Git: e.gitExec(),
			MkdirAs: func(d string) error {
				_, err := runner.AsUser(runner.Spec{}, e.cfg.Runner, func() error { return os.MkdirAll(d, 0o755) })
				return err
			}})
	})
	return e.gitw.w
}

// gitTimeout bounds one git command.
const gitTimeout = 10 * time.Minute

// gitExec runs git through the runner, as the executor's step user: an
// argument vector, no shell.
func (e *Executor) gitExec() gitwork.Exec {
	return func(ctx context.Context, dir string, env map[string]string, args ...string) (string, error) {
		var out strings.Builder
		argv := append(gitwork.Args("agentic", "agentic@"+e.env.Node), args...)
		res := runner.Run(ctx, runner.Spec{Kind: event.KindShell, Args: argv, Cwd: dir, Env: env, Timeout: gitTimeout}, e.cfg.Runner, nil,
			func(stream string, b []byte) {
				if stream == runner.StreamStdout {
					out.Write(b)
				}
			})
		if res.Status != event.TaskSucceeded {
			msg := res.Error
			if tail := strings.TrimSpace(res.OutputTail); tail != "" {
				msg += ": " + lastLines(tail, 4)
			}
			return out.String(), errors.New(msg)
		}
		return out.String(), nil
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// gitEnv is what git needs to reach spec's remote: the token of the
// forge spec.Forge names, as an HTTP header (GIT_CONFIG_*
// variables, never an argument); nil when spec names none.
func (e *Executor) gitEnv(spec event.GitSpec) (map[string]string, error) {
	if spec.Forge == "" {
		return nil, nil
	}
	f, ok := e.cfg.Git.Forges[spec.Forge]
	if !ok {
		return nil, fmt.Errorf("the plan's git block names forge %q, which this executor's configuration (executor.forges) does not have", spec.Forge)
	}
	tok, err := f.Token()
	if err != nil {
		return nil, err
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok))
	return map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
		"GIT_CONFIG_VALUE_0": "Authorization: Basic " + basic}, nil
}

// runGitStep runs a step of a git run.
func (e *Executor) runGitStep(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) event.Draft {
	if isGitKind(a.Step.Kind) {
		return e.runGitOp(ctx, run, a, started, t)
	}
	fail := func(why string) event.Draft {
		return event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node,
			Status: event.TaskFailed, Class: event.ClassLogic, ExitCode: -1, Error: why, Started: started})
	}
	st, err := e.git().Load(run)
	switch {
	case errors.Is(err, gitwork.ErrNoWorktree) || (err == nil && (!st.Made || st.Finished)):
		return fail(fmt.Sprintf("step %s belongs to git run %s, whose worktree this executor does not hold (made elsewhere, not made, or already finished)", a.Step.ID, run))
	case err != nil:
		return fail(err.Error())
	}
	if cwd := path.Clean(filepath.ToSlash(a.Step.Cwd)); filepath.IsAbs(a.Step.Cwd) || cwd == ".." || strings.HasPrefix(cwd, "../") {
		return fail(fmt.Sprintf("step %s of a git run: cwd %q leaves the run's worktree", a.Step.ID, a.Step.Cwd))
	}
	ctx = context.WithValue(ctx, assignedKey{}, a.Step)
	a.Step.Cwd = filepath.Join(st.Worktree, a.Step.Cwd)
	d := e.runPlain(ctx, run, a, started, t)
	var fin event.TaskFinishedData
	if err := json.Unmarshal(d.Data, &fin); err != nil {
		return d
	}
	edit := a.Step.Kind == event.KindFileWrite || a.Step.Kind == event.KindFilePatch
	switch {
	case edit && fin.Status == event.TaskSucceeded:
		title := a.Step.Title
		if title == "" {
			title = a.Step.ID
		}
		id, err := e.git().Commit(ctx, run, "fix(plan): "+title,
			[][2]string{{"Agentic-Run", run}, {"Agentic-Step", a.Step.ID}, {"Agentic-Event", d.ID}})
		switch {
		case err != nil:
			fin.Status, fin.Class, fin.ExitCode = event.TaskFailed, event.ClassLogic, -1
			fin.Error = redact.Redact("the edit was made in the worktree but not committed: " + err.Error())
		case id != "":
			fin.OutputTail = clip(fin.OutputTail+"committed "+id+"\n", e.cfg.Runner.TailBytes)
		}
	case !edit && (fin.Status == event.TaskSucceeded || fin.Status == event.TaskFailed || fin.Status == event.TaskSkipped) && !fin.Interrupted:
		if err := e.git().Validated(run, event.GitValidation{Step: a.Step.ID, Status: fin.Status, ExitCode: fin.ExitCode}); err != nil {
			e.log.Error("git run: record a validation", "run", run, "step", a.Step.ID, "err", err)
		}
	default:
		return d
	}
	data, err := json.Marshal(fin)
	if err != nil {
		return d
	}
	d.Data = data
	return d
}

// assignedKey carries, in a git run step's context, the step as its
// assignment gave it, before runGitStep placed its cwd in the worktree:
// the step an approval is of (event.GateSubject).
type assignedKey struct{}

// asAssigned is s as its assignment gave it (see assignedKey).
func asAssigned(ctx context.Context, s event.Step) event.Step {
	if o, ok := ctx.Value(assignedKey{}).(event.Step); ok && o.ID == s.ID {
		return o
	}
	return s
}

// runGitOp runs git.worktree, git.finish or git.discard.
func (e *Executor) runGitOp(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) event.Draft {
	if _, err := e.vet(ctx, a); err != nil && ctx.Err() == nil {
		return e.refusedDraft(run, a, started, err)
	}
	e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node}))
	fin := event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, Status: event.TaskSucceeded, Started: time.Now().UTC()}
	if started.After(fin.Started) {
		fin.Started = started
	}
	out, err := e.gitOp(ctx, run, a)
	fin.Duration = event.Duration(time.Since(fin.Started))
	fin.OutputTail = clip(redact.Redact(out), e.cfg.Runner.TailBytes)
	if err != nil {
		fin.Status, fin.Class, fin.ExitCode, fin.Error = event.TaskFailed, event.ClassLogic, -1, redact.Redact(err.Error())
		if ctx.Err() != nil {
			byOperator := cancelledByOperator(ctx)
			fin.Status, fin.Class, fin.ExitCode, fin.Error = event.TaskCancelled, "", 0, "cancelled during "+string(a.Step.Kind)
			if !byOperator {
				fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
				fin.Error = event.LegacyInterruptedPrefix + ": the executor shut down during " + string(a.Step.Kind)
			}
		}
	}
	return event.MustDraft(event.TaskFinished, run, fin)
}

// gitOp does the work of runGitOp and says what it did.
func (e *Executor) gitOp(ctx context.Context, run string, a event.TaskAssignedData) (string, error) {
	if a.Step.Kind == event.KindGitDiscard {
		if err := e.git().Discard(ctx, run); err != nil {
			return "", err
		}
		return "removed the run's worktree and branch; nothing was pushed\n", nil
	}
	if a.Step.Git == nil {
		return "", fmt.Errorf("step %s (%s) carries no git block", a.Step.ID, a.Step.Kind)
	}
	spec := *a.Step.Git
	env, err := e.gitEnv(spec)
	if err != nil {
		return "", err
	}
	if a.Step.Kind == event.KindGitWorktree {
		st, err := e.git().Create(ctx, run, spec, env)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("worktree %s on branch %s from %s (%s)\n", st.Worktree, st.Branch, st.Base, st.BaseCommit), nil
	}
	res, err := e.git().Finish(ctx, run, spec, env)
	if err != nil {
		return "", err
	}
	// One pr.opened per run: recorded before it is emitted, with its
	// event id, so that a git.finish attempted again (its result lost)
	// emits the same event — which the ledger keeps once — or nothing.
	st := res.State
	if st.PR == nil {
		pr := e.pullRequest(ctx, run, a, spec, res)
		if st, err = e.git().RecordPR(run, event.NewID(), pr); err != nil {
			return "", fmt.Errorf("record the pull request: %w", err)
		}
	}
	pr := *st.PR
	if st.PREmitted {
		return fmt.Sprintf("branch %s: the pull request was recorded by an earlier attempt (pr.opened %s)\n", pr.Head, st.PREvent), nil
	}
	d := event.MustDraft(event.PROpened, run, pr)
	d.ID = st.PREvent
	if err := e.env.Emit.Emit(ctx, d); err != nil {
		return "", fmt.Errorf("record pr.opened: %w", err)
	}
	if err := e.git().PREmitted(run); err != nil {
		e.log.Warn("git run: pr.opened emitted, not recorded as emitted; a retry emits it again under the same id", "run", run, "err", err)
	} else if err := e.git().End(ctx, run); err != nil {
		e.log.Warn("git run: prune what the ended run leaves", "run", run, "err", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "branch %s: %d commits on %s (%s), diff sha256 %s\n", pr.Head, len(pr.Commits), pr.Base, pr.BaseCommit, pr.DiffHash)
	if pr.Remote != "" {
		fmt.Fprintf(&b, "pushed to %s\n", pr.Remote)
	}
	switch {
	case pr.URL != "":
		fmt.Fprintf(&b, "pull request %d on %s: %s\n", pr.Number, pr.Forge, pr.URL)
	case pr.ForgeError != "":
		fmt.Fprintf(&b, "pull request recorded; the forge did not open it: %s\n", pr.ForgeError)
	default:
		b.WriteString("pull request recorded (pr.opened)\n")
	}
	return b.String(), nil
}

// pullRequest is the pr.opened of a finished run, opened on the forge
// spec.Forge names when the branch was pushed.
func (e *Executor) pullRequest(ctx context.Context, run string, a event.TaskAssignedData, spec event.GitSpec, res gitwork.Result) event.PROpenedData {
	st := res.State
	pr := event.PROpenedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, Repo: st.Origin,
		Base: spec.Base, BaseCommit: st.BaseCommit, Head: st.Branch, Commits: res.Commits, DiffHash: res.DiffHash,
		Validations: st.Validations, Title: "agentic run " + run}
	if res.Pushed {
		pr.Remote = spec.Push
	}
	if p := spec.PullRequest; p != nil {
		if p.Title != "" {
			pr.Title = p.Title
		}
		pr.Draft = p.Draft
	}
	f, ok := e.cfg.Git.Forges[spec.Forge]
	switch {
	case spec.Forge == "" || spec.PullRequest == nil:
		return pr
	case !ok:
		pr.ForgeError = fmt.Sprintf("no forge %q in this executor's configuration", spec.Forge)
		return pr
	case !res.Pushed:
		pr.ForgeError = "the branch was not pushed (the plan names no push remote)"
		return pr
	}
	owner, repo, err := forge.OwnerRepo(res.RemoteURL)
	if err == nil {
		var opened forge.PR
		opened, err = f.Open(ctx, forge.Request{Owner: owner, Repo: repo, Title: pr.Title, Head: pr.Head, Base: pr.Base, Draft: pr.Draft,
			Body: prBody(run, pr)})
		pr.Forge, pr.URL, pr.Number = f.Name, opened.URL, opened.Number
	}
	if err != nil {
		pr.Forge, pr.ForgeError = f.Name, redact.Redact(err.Error())
	}
	return pr
}

// prBody is the pull request's description: the run, its commits and
// validations.
func prBody(run string, pr event.PROpenedData) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Made by agentic run %s.\n\n", run)
	for _, c := range pr.Commits {
		fmt.Fprintf(&b, "- %s %s (step %s)\n", c.ID[:min(12, len(c.ID))], c.Subject, c.Step)
	}
	if len(pr.Validations) > 0 {
		b.WriteString("\nValidations:\n")
		for _, v := range pr.Validations {
			fmt.Fprintf(&b, "- %s: %s\n", v.Step, v.Status)
		}
	}
	return b.String()
}

// GitFrom is the GitConfig of an executor configured by c: its forges.
func GitFrom(c config.ExecutorConfig) GitConfig {
	g := GitConfig{Forges: make(map[string]forge.Forge, len(c.Forges))}
	for name, f := range c.Forges {
		g.Forges[name] = forge.Forge{Name: name, API: f.API, TokenFile: f.TokenFile}
	}
	return g
}

// gitSweepMax bounds the entries the sweep at start looks at.
const gitSweepMax = 1000

// sweepGit removes, in the background at start, what ended git runs left
// here (gitwork.Sweep): state files kept past EndedKeep, interrupted
// saves, clones no run names.
func (e *Executor) sweepGit() {
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		n, err := e.git().Sweep(e.loopCtx, time.Now(), gitSweepMax)
		switch {
		case err != nil:
			e.log.Warn("git runs: sweep at start", "removed", n, "err", err)
		case n > 0:
			e.log.Info("git runs: sweep at start", "removed", n)
		}
	}()
}
