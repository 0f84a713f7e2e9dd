package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/nats-io/nats.go"
)

// run executes one attempt, recorded as started: its task.started is
// queued to the reporter when the process started, and run returns the
// task.finished once the process group is gone. j is what vet judged of
// it.
func (e *Executor) run(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task, j judged) event.Draft {
	spec := e.spec(a)
	spec.WriteScope = j.writeScope()
	onStart := func(pid int) {
		e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, PID: pid}))
	}
	if d := e.inputsFailed(ctx, run, a, started); d != nil { // artifacts.go
		return *d
	}
	subj := bus.LogSubject(run, a.Step.ID)
	attempt := strconv.Itoa(a.Attempt)
	facts := newFactOutput(a.Step) // facts.go
	res := runner.Run(ctx, spec, e.cfg.Runner, onStart, func(stream string, chunk []byte) {
		msg := &nats.Msg{Subject: subj, Data: chunk, Header: nats.Header{"Agentic-Stream": []string{stream}, "Agentic-Attempt": []string{attempt}}}
		_, _ = e.cfg.JS.PublishMsgAsync(msg)
		facts.add(stream, chunk)
	})
	e.recordOutputs(ctx, run, a, &res, j.p) // artifacts.go
	e.recordFacts(run, a, res, facts)
	fin := event.TaskFinishedData{
		Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node,
		Status: res.Status, Class: res.Class, ExitCode: res.ExitCode, Error: res.Error, TimedOut: res.TimedOut,
		Started: res.Started, Duration: event.Duration(res.Duration), Cwd: res.Cwd, User: res.User, OutputTail: res.OutputTail,
		CommandHash: CommandHash(a.Step.Run),
	}
	if fin.Started.IsZero() {
		fin.Started = started
	}
	if res.Status == event.TaskSkipped && fin.Error == "" {
		fin.Error = res.Reason // why a guard skipped it
	}
	byOperator := cancelledByOperator(ctx)
	if res.Status == event.TaskCancelled && !byOperator {
		// Killed by shutdown, not by an operator: report an interruption so
		// the orchestrator decides (re-run if idempotent).
		fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
		fin.Error = event.LegacyInterruptedPrefix + ": the executor shut down during the attempt"
	}
	return event.MustDraft(event.TaskFinished, run, fin)
}

// noopDrafts runs a noop step at once and returns its started and
// finished events.
func noopDrafts(ctx context.Context, node string, opts runner.Options, run string, a event.TaskAssignedData) []event.Draft {
	now := time.Now().UTC()
	started := event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: node})
	started.Time = now
	res := runner.Run(ctx, runner.Spec{Kind: event.KindNoop}, opts, nil, nil)
	fin := event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{
		Step: a.Step.ID, Attempt: a.Attempt, Node: node,
		Status: res.Status, Class: res.Class, Error: res.Error, Started: now, Duration: event.Duration(res.Duration),
	})
	return []event.Draft{started, fin}
}

// CommandHash identifies a command for statistics: 16 hex digits of sha256.
func CommandHash(cmd string) string {
	if cmd == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(cmd)))
	return hex.EncodeToString(sum[:8])
}
