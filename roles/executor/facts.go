package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/executor/runner"
)

// Facts a step writes (Step.Facts, docs/memory.md): when the attempt ends
// succeeded or failed, the executor reads each fact's value — the step's
// standard output, a file in its working directory, or one value of the
// JSON object it printed — and records it as memory.recorded, before the
// attempt's task.finished. The memory fold decides the fact's scope and
// whether it starts quarantined; the executor only reads.

// maxFactOutput bounds the standard output kept for a step's facts.
const maxFactOutput = 256 << 10

// factOutput keeps the start of a step's standard output for its facts.
type factOutput struct {
	buf  []byte
	over bool
}

// add is the runner's output callback for stdout chunks.
func (o *factOutput) add(stream string, chunk []byte) {
	if o == nil || stream != "stdout" || o.over {
		return
	}
	if len(o.buf)+len(chunk) > maxFactOutput {
		o.over = true
		return
	}
	o.buf = append(o.buf, chunk...)
}

// newFactOutput returns a collector when the step writes facts, nil
// otherwise (add on nil does nothing).
func newFactOutput(s event.Step) *factOutput {
	if len(s.Facts) == 0 {
		return nil
	}
	return &factOutput{}
}

// factDrafts reads the facts of the attempt a of run and returns their
// memory.recorded drafts; a fact whose value cannot be read is left out,
// and why is returned for the log.
func factDrafts(run string, a event.TaskAssignedData, res runner.Result, out *factOutput) ([]event.Draft, []error) {
	if out == nil || (res.Status != event.TaskSucceeded && res.Status != event.TaskFailed) {
		return nil, nil
	}
	var drafts []event.Draft
	var errs []error
	for _, f := range a.Step.Facts {
		v, err := factValue(f, res.Cwd, out)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %s: fact %s: %w", a.Step.ID, f.Key, err))
			continue
		}
		drafts = append(drafts, event.MustDraft(event.MemoryRecorded, run, event.MemoryRecordedData{
			Scope: f.Scope, Key: f.Key, Value: redact.Latest.RedactMember(f.Key, v), Tags: f.Tags, TTL: f.TTL,
			Step: a.Step.ID, Attempt: a.Attempt, Status: res.Status, From: f.From,
		}))
	}
	return drafts, errs
}

// errFactTooLarge: a fact's value is beyond event.MaxFactValue.
var errFactTooLarge = fmt.Errorf("value is larger than %d bytes", event.MaxFactValue)

// factValue reads one fact's value.
func factValue(f event.FactSpec, cwd string, out *factOutput) (string, error) {
	var v string
	switch f.From {
	case event.FactFromStdout:
		if out.over {
			return "", errFactTooLarge
		}
		v = strings.TrimSpace(string(out.buf))
	case event.FactFromFile:
		b, err := readFactFile(cwd, f.Path)
		if err != nil {
			return "", err
		}
		v = strings.TrimSpace(string(b))
	case event.FactFromJSON:
		if out.over {
			return "", fmt.Errorf("standard output is larger than %d bytes", maxFactOutput)
		}
		s, err := jsonPath(out.buf, f.Path)
		if err != nil {
			return "", err
		}
		v = s
	default:
		return "", fmt.Errorf("unknown source %q", f.From)
	}
	if len(v) > event.MaxFactValue {
		return "", errFactTooLarge
	}
	return v, nil
}

// readFactFile reads a regular file at a relative path inside the step's
// working directory: an absolute path, one that leaves the directory
// (.., a symbolic link out of it) or a file larger than a fact is
// refused, so a fact cannot carry what the step could not point at.
func readFactFile(cwd, path string) ([]byte, error) {
	if cwd == "" {
		return nil, errors.New("the step has no working directory")
	}
	if filepath.IsAbs(path) || !filepath.IsLocal(path) {
		return nil, fmt.Errorf("path %q must be relative and stay inside the step's working directory", path)
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return nil, fmt.Errorf("open working directory: %w", err)
	}
	defer root.Close()
	fh, err := root.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: %w", path, fs.ErrInvalid)
	}
	b, err := io.ReadAll(io.LimitReader(fh, event.MaxFactValue+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > event.MaxFactValue {
		return nil, errFactTooLarge
	}
	return b, nil
}

// jsonPath reads the value at a dotted path of the JSON object out: a
// string as it is, anything else as compact JSON.
func jsonPath(out []byte, path string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(out)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("standard output is not JSON: %w", err)
	}
	for _, part := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("json path %q: %q is not in an object", path, part)
		}
		if v, ok = obj[part]; !ok {
			return "", fmt.Errorf("json path %q: no member %q", path, part)
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("json path %q: %w", path, err)
	}
	return string(b), nil
}

// recordFacts queues the attempt's facts ahead of its task.finished.
func (e *Executor) recordFacts(run string, a event.TaskAssignedData, res runner.Result, out *factOutput) {
	drafts, errs := factDrafts(run, a, res, out)
	for _, err := range errs {
		e.log.Warn("fact not recorded", "run", run, "step", a.Step.ID, "attempt", a.Attempt, "err", err)
	}
	for _, d := range drafts {
		e.report.note(d)
	}
}
