package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/nats-io/nats.go/jetstream"
)

// Artifacts of a step (docs/artifacts.md): before the step runs, the
// executor writes its inputs — resolved by the leader to a hash each,
// in task.assigned — into the working directory, each verified against
// its hash; when the step succeeds, it stores each file its outputs
// match in the Object Store (bus/artifact) and records it
// (artifact.stored), ahead of the attempt's task.finished. The event
// follows the whole, acknowledged object: an executor killed during a
// store records nothing, and the upload it leaves is an orphan.

// artifactStore opens the store once, lazily, and again after a failure.
type artifactStore struct {
	mu sync.Mutex
	st *artifact.Store
}

func (a *artifactStore) get(ctx context.Context, js jetstream.JetStream) (*artifact.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st != nil {
		return a.st, nil
	}
	if js == nil {
		return nil, errors.New("no JetStream connection")
	}
	st, err := artifact.Open(ctx, js)
	if err != nil {
		return nil, err
	}
	a.st = st
	return st, nil
}

// artifactFailure is a step failed by its inputs or outputs.
type artifactFailure struct {
	class event.FailureClass
	msg   string
}

func (f *artifactFailure) Error() string { return f.msg }

// failureClass is how an artifact error fails a step: bytes that do not
// match their hash, a missing artifact, a cap or a bad output are the
// step's (logic: a retry would meet them again); anything else — the
// store unreachable — is transient.
func failureClass(err error) event.FailureClass {
	var pe *fs.PathError
	switch {
	case errors.Is(err, artifact.ErrTampered), errors.Is(err, artifact.ErrNotFound),
		errors.Is(err, artifact.ErrTooLarge), errors.Is(err, errBadOutput), errors.As(err, &pe):
		return event.ClassLogic
	}
	return event.ClassTransient
}

// fetchInputs writes a's resolved inputs into dir, each verified against
// its hash and renamed into place only when whole.
func (e *Executor) fetchInputs(ctx context.Context, a event.TaskAssignedData, dir string) error {
	if len(a.Inputs) == 0 {
		return nil
	}
	st, err := e.arts.get(ctx, e.cfg.JS)
	if err != nil {
		return &artifactFailure{event.ClassTransient, fmt.Sprintf("inputs: the artifact store: %v", err)}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return &artifactFailure{event.ClassLogic, fmt.Sprintf("inputs: working directory: %v", err)}
	}
	defer root.Close()
	for _, in := range a.Inputs {
		if err := fetchInput(ctx, st, root, in); err != nil {
			return &artifactFailure{failureClass(err), fmt.Sprintf("input %s (run %s, sha256 %s): %v", in.As, in.Run, in.SHA256, err)}
		}
	}
	return nil
}

// fetchInput writes one input through a temporary file beside it, inside
// root (no symbolic link leads out of it).
func fetchInput(ctx context.Context, st *artifact.Store, root *os.Root, in event.ResolvedInput) error {
	if err := event.CheckArtifactPath(in.As); err != nil {
		return err
	}
	name := filepath.FromSlash(in.As)
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".part")
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = st.Get(ctx, in.SHA256, in.Size, in.Object, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// errBadOutput marks an output the step's declaration refuses.
var errBadOutput = errors.New("bad output")

// inputsFailed fetches a's inputs into the step's working directory and
// returns the task.finished of an attempt they fail, or nil.
func (e *Executor) inputsFailed(ctx context.Context, run string, a event.TaskAssignedData, started time.Time) *event.Draft {
	if len(a.Inputs) == 0 {
		return nil
	}
	dir, err := runner.Dir(e.spec(a), e.cfg.Runner)
	if err == nil {
		err = e.fetchInputs(ctx, a, dir)
	}
	if err == nil {
		return nil
	}
	class := event.ClassLogic
	var af *artifactFailure
	if errors.As(err, &af) {
		class = af.class
	}
	e.log.Warn("step inputs refused", "run", run, "step", a.Step.ID, "attempt", a.Attempt, "err", err)
	d := event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{
		Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node,
		Status: event.TaskFailed, Class: class, ExitCode: -1, Error: err.Error(),
		Started: started, Cwd: dir, CommandHash: CommandHash(a.Step.Run),
	})
	return &d
}

// recordOutputs stores the outputs of a succeeded attempt and queues
// their artifact.stored ahead of its task.finished; when they cannot all
// be stored, res becomes a failure saying why.
func (e *Executor) recordOutputs(ctx context.Context, run string, a event.TaskAssignedData, res *runner.Result, p *policy.Policy) {
	if len(a.Step.Outputs) == 0 || res.Status != event.TaskSucceeded {
		return
	}
	drafts, err := e.storeOutputs(ctx, run, a, res.Cwd, p)
	for _, d := range drafts {
		e.report.note(d)
	}
	if err != nil {
		e.log.Warn("step outputs not stored", "run", run, "step", a.Step.ID, "attempt", a.Attempt, "err", err)
		res.Status, res.Class, res.Error = event.TaskFailed, failureClass(err), "outputs: "+err.Error()
	}
}

// storeOutputs stores each file a's outputs match in dir, and returns
// their artifact.stored drafts (those stored before an error too). p is
// the policy the step was judged with (nil: the default caps).
func (e *Executor) storeOutputs(ctx context.Context, run string, a event.TaskAssignedData, dir string, p *policy.Policy) ([]event.Draft, error) {
	if len(a.Step.Outputs) == 0 {
		return nil, nil
	}
	var budgets policy.Budgets
	if p != nil {
		budgets = p.Budgets
	}
	perArtifact, perRun := budgets.ArtifactCaps()
	files, err := matchOutputs(dir, a.Step.Outputs)
	if err != nil {
		return nil, err
	}
	st, err := e.arts.get(ctx, e.cfg.JS)
	if err != nil {
		return nil, fmt.Errorf("outputs: the artifact store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("outputs: working directory: %w", err)
	}
	defer root.Close()
	caps := outputCaps{run: run, perArtifact: perArtifact, perRun: perRun, recorded: a.ArtifactBytes}
	var drafts []event.Draft
	for _, name := range files {
		info, err := putOutput(ctx, st, root, name, caps, e.log)
		if err != nil {
			if errors.Is(err, artifact.ErrRunFull) {
				err = fmt.Errorf("%w (budgets.run_artifact_bytes)", err)
			}
			return drafts, fmt.Errorf("output %s: %w", name, err)
		}
		drafts = append(drafts, event.MustDraft(event.ArtifactStored, run, event.ArtifactStoredData{
			Name: name, Size: info.Size, SHA256: info.SHA256, Object: info.Object,
			Step: a.Step.ID, Attempt: a.Attempt, Retention: event.RetentionRun,
		}))
	}
	return drafts, nil
}

// outputCaps are the caps a step's outputs are stored within: one
// artifact's, and the run's, counted from what the ledger recorded of it
// when the step was assigned.
type outputCaps struct {
	run                 string
	perArtifact, perRun int64
	recorded            int64
}

// putOutput stores one regular file of root, refusing one larger than
// the cap of one artifact before reading it. Its size is first reserved
// in the run's total (artifact.Store.Reserve), atomically across every
// store of the run, so that steps storing at the same time cannot
// together pass the run's cap; what is not stored is given back.
func putOutput(ctx context.Context, st *artifact.Store, root *os.Root, name string, c outputCaps, log *slog.Logger) (artifact.Info, error) {
	f, err := root.Open(filepath.FromSlash(name))
	if err != nil {
		return artifact.Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return artifact.Info{}, err
	}
	if !fi.Mode().IsRegular() {
		return artifact.Info{}, fmt.Errorf("%w: not a regular file", errBadOutput)
	}
	n := fi.Size()
	if n > c.perArtifact {
		return artifact.Info{}, fmt.Errorf("%w (%d bytes, the cap is %d, budgets.artifact_bytes)", artifact.ErrTooLarge, n, c.perArtifact)
	}
	if _, err := st.Reserve(ctx, c.run, n, c.recorded, c.perRun); err != nil {
		return artifact.Info{}, err
	}
	r := io.Reader(f)
	if n == 0 {
		r = strings.NewReader("") // empty when the step finished (MaxSize 0 is no cap)
	}
	info, err := st.Put(ctx, name, r, artifact.PutOptions{MaxSize: n})
	if back := n - info.Size; err != nil || back > 0 {
		if err != nil {
			back = n
		}
		releaseReserved(ctx, st, c.run, back, log.With("output", name))
	}
	if errors.Is(err, artifact.ErrTooLarge) {
		err = fmt.Errorf("%w: the file grew past its %d bytes while it was stored", err, n)
	}
	return info, err
}

// matchOutputs returns the files, relative slash paths, that globs match
// in dir, each once, in order. A glob that leaves dir, a path through or
// to a symbolic link, and a glob that matches no regular file are
// refused.
func matchOutputs(dir string, globs []string) ([]string, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: the step has no working directory", errBadOutput)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("outputs: working directory: %w", err)
	}
	defer root.Close()
	var out []string
	seen := map[string]bool{}
	for _, g := range globs {
		if err := event.CheckArtifactPath(g); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadOutput, err)
		}
		matches, err := globNoLinks(root, ".", strings.Split(g, "/"))
		if err != nil {
			return nil, fmt.Errorf("%w: output %q: %w", errBadOutput, g, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%w: output %q matched no file in %s", errBadOutput, g, dir)
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// maxOutputMatches bounds what one glob may match.
const maxOutputMatches = 1000

// globNoLinks matches the pattern elements parts below dir of root, one
// directory level at a time, with Lstat: the regular files the last
// element matches. A symbolic link met on the way — one a pattern element
// matches, or one a plain element names — is refused, so that an output
// is always what the step wrote inside its directory, never what a link
// points at.
func globNoLinks(root *os.Root, dir string, parts []string) ([]string, error) {
	last := len(parts) == 1
	var names []string
	if !hasMeta(parts[0]) {
		names = []string{parts[0]}
	} else {
		f, err := root.Open(filepath.FromSlash(dir))
		if err != nil {
			return nil, nil // no such directory: no match
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if ok, _ := path.Match(parts[0], e.Name()); ok {
				names = append(names, e.Name())
			}
		}
	}
	var out []string
	for _, n := range names {
		p := path.Join(dir, n)
		fi, err := root.Lstat(filepath.FromSlash(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symbolic link: refused", p)
		case last && fi.Mode().IsRegular():
			out = append(out, p)
		case !last && fi.IsDir():
			sub, err := globNoLinks(root, p, parts[1:])
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		if len(out) > maxOutputMatches {
			return nil, fmt.Errorf("matches more than %d files", maxOutputMatches)
		}
	}
	return out, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// releaseReserved gives n bytes reserved in run's artifact total back
// (artifact.Store.Release), even when ctx is cancelled (a store that
// failed on the way out still gives back), logging what it could not.
func releaseReserved(ctx context.Context, st *artifact.Store, run string, n int64, log *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := st.Release(rctx, run, n); err != nil {
		log.Warn("reserved artifact bytes not given back: the run's cap counts them", "run", run, "bytes", n, "err", err)
	}
}
