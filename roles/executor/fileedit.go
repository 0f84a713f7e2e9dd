package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/executor/fileedit"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/nats-io/nats.go"
)

// runStep runs one recorded attempt once vet, judging it again with the
// policy version its assignment names, lets it (else it fails with class
// policy, never started): the file kinds (file.write, file.patch,
// file.restore) through fileedit, every other kind through the runner
// (run).
func (e *Executor) runStep(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) event.Draft {
	if a.Step.Worktree || isGitKind(a.Step.Kind) {
		return e.runGitStep(ctx, run, a, started, t) // git.go
	}
	return e.runPlain(ctx, run, a, started, t)
}

// runPlain is runStep for a step outside a git run's worktree (or with
// its working directory already in it).
func (e *Executor) runPlain(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) event.Draft {
	var j judged
	var err error
	if v := t.verdict; v != nil { // judged while its start was recorded (prejudge)
		j, err = v.j, v.err
	} else {
		j, err = e.vet(ctx, a)
	}
	if err != nil && ctx.Err() == nil {
		return e.refusedDraft(run, a, started, err)
	}
	switch a.Step.Kind {
	case event.KindFileWrite, event.KindFilePatch, event.KindFileRestore:
		return e.runFileEdit(ctx, run, a, started, t, j)
	case event.KindTool:
		return e.runTool(ctx, run, a, started, t, j)
	case event.KindResearch:
		return e.runResearch(ctx, run, a, started, j) // research.go
	}
	return e.run(ctx, run, a, started, t, j)
}

// EditsDir is where an executor whose local state is in stateDir keeps
// the before-images of its file edits: beside it, "<stateDir>-edits"
// (data/executor-edits on a node).
func EditsDir(stateDir string) string {
	return filepath.Clean(stateDir) + "-edits"
}

// EditKey is the key the executor applies a step's file edit under, and
// restores it by.
func EditKey(run, step string) string { return run + "/" + step }

// runFileEdit applies a file.write or file.patch, or restores the
// before-images of an earlier edit (file.restore: compensates.edits, or,
// when it gives none because the edit's attempt was interrupted before
// reporting them, what this executor recorded of that step's edit —
// nothing recorded, nothing to undo), and returns its
// task.finished: Edits holds the files' content hashes before and after
// (what a compensation restores), OutputTail the diff of what changed,
// redacted as output is. The same diff goes to the step's log subject.
// An edit that cannot be made (a path refused, a patch that does not
// apply, a file changed since the edit it restores) fails with class
// logic and changes nothing; one that fails part-way on an I/O error
// fails the same way, and what it changed is in the journal, so a
// file.restore without edits undoes it.
func (e *Executor) runFileEdit(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task, j judged) event.Draft {
	e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node}))
	fin := event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, Status: event.TaskSucceeded, Started: time.Now().UTC()}
	if started.After(fin.Started) {
		fin.Started = started
	}
	res, dir, user, err := e.fileEdit(ctx, run, a, j)
	fin.Duration = event.Duration(time.Since(fin.Started))
	fin.Cwd, fin.User = dir, user
	if err != nil {
		fin.Status, fin.Class, fin.ExitCode, fin.Error = event.TaskFailed, runner.ClassOf(err), -1, redact.Redact(err.Error())
		if ctx.Err() != nil {
			byOperator := cancelledByOperator(ctx)
			fin.Status, fin.Class, fin.ExitCode, fin.Error = event.TaskCancelled, "", 0, "cancelled before the edit"
			if !byOperator {
				// Stopped by a shutdown, as run reports it: the
				// orchestrator decides (file edits are idempotent).
				fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
				fin.Error = event.LegacyInterruptedPrefix + ": the executor shut down before the edit"
			}
		}
		return event.MustDraft(event.TaskFinished, run, fin)
	}
	fin.Edits = res.Edits
	out := redact.Redact(res.Diff)
	if !res.Changed {
		out = "no change: every file already holds the result\n"
	}
	fin.OutputTail = clip(out, e.cfg.Runner.TailBytes)
	for _, chunk := range chunks(out, logChunkBytes) {
		msg := &nats.Msg{Subject: bus.LogSubject(run, a.Step.ID), Data: []byte(chunk),
			Header: nats.Header{"Agentic-Stream": []string{"stdout"}, "Agentic-Attempt": []string{strconv.Itoa(a.Attempt)}}}
		_, _ = e.cfg.JS.PublishMsgAsync(msg)
	}
	return event.MustDraft(event.TaskFinished, run, fin)
}

// logChunkBytes bounds one message of a diff sent to the logs stream.
const logChunkBytes = 32 << 10

// chunks cuts s into pieces of at most n bytes, after a newline where
// there is one.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := strings.LastIndexByte(s[:n], '\n') + 1
		if cut <= 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// fileEdit does the work of runFileEdit; dir is the step's working
// directory as resolved, user the user the edit is made as. An absolute
// path outside dir may be edited as j allows (the policy's file scope, or
// an exact approval).
//
// Every operation on the edited files runs as the step's user
// (runner.AsUser: the executor's run_as, as a shell step would run), so an
// edit reaches only what that user may read and write, a file it creates
// is that user's, and its diff holds only what that user could read. The
// before-images and the journal stay in the executor's state directory,
// written as agentd.
func (e *Executor) fileEdit(ctx context.Context, run string, a event.TaskAssignedData, j judged) (fileedit.Result, string, string, error) {
	if err := ctx.Err(); err != nil {
		return fileedit.Result{}, "", "", err
	}
	st, err := fileedit.Open(EditsDir(e.cfg.StateDir))
	if err != nil {
		return fileedit.Result{}, "", "", err
	}
	spec := e.spec(a)
	var user string
	opts := fileedit.Options{AllowAbsolute: j.allowAbsolute(), As: func(fn func() error) error {
		name, err := runner.AsUser(spec, e.cfg.Runner, fn)
		if name != "" {
			user = name
		}
		if err != nil && name != "" {
			err = fmt.Errorf("as user %s: %w", name, err)
			if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%w (file edits run as the step user %s: give that user access, or edit the file in a shell step that runs as a user who has it)", err, name)
			}
		}
		return err
	}}
	if a.Step.Kind == event.KindFileRestore {
		c := a.Compensates
		if c == nil || c.Step == "" {
			return fileedit.Result{}, "", "", fmt.Errorf("file.restore without the step whose edit it undoes (compensates)")
		}
		key := EditKey(run, c.Step)
		edits := c.Edits
		if len(edits) == 0 {
			// The edit's attempt was interrupted before it reported its
			// edits: undo what this executor recorded of it.
			if edits, err = st.Recorded(key); err != nil {
				return fileedit.Result{}, "", "", err
			}
			if len(edits) == 0 {
				return fileedit.Result{Changed: false}, "", "", nil
			}
		}
		r, err := st.Restore(key, edits, opts)
		return r, "", user, err
	}
	dir, err := stepDir(a.Step.Cwd, e.cfg.Runner.DefaultCwd)
	if err != nil {
		return fileedit.Result{}, dir, "", err
	}
	r, err := st.Apply(fileedit.FromStep(EditKey(run, a.Step.ID), a.Step, dir), opts)
	return r, dir, user, err
}

// stepDir is a step's working directory, absolute, resolved as the
// runner resolves it (relative to def, or to the process's).
func stepDir(cwd, def string) (string, error) {
	if def == "" {
		def = runner.DefaultOptions().DefaultCwd
	}
	if cwd == "" {
		cwd = def
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(def, cwd)
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return cwd, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return abs, fmt.Errorf("cwd %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return abs, fmt.Errorf("cwd %s: not a directory", abs)
	}
	return abs, nil
}

// clip keeps the head of a diff that is longer than max bytes (its file
// headers say what changed) and says how much was cut.
func clip(s string, max int) string {
	if max <= 0 {
		max = runner.DefaultTailBytes
	}
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + fmt.Sprintf("[diff cut: %d more bytes]\n", len(s)-len(cut))
}
