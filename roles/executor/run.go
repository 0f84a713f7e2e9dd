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
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go"
)

// run executes one attempt and reports it.
func (e *Executor) run(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) {
	spec := runner.Spec{Kind: a.Step.Kind, Command: a.Step.Run, Env: a.Step.Env, Cwd: a.Step.Cwd, Timeout: a.Step.Timeout.Std(), Creates: a.Step.Creates, Check: a.Step.Check}
	onStart := func(pid int) {
		d := event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, PID: pid})
		if err := e.env.Emit.Emit(context.WithoutCancel(ctx), d); err != nil {
			e.log.Error("emit task.started", "err", err)
		}
	}
	subj := bus.LogSubject(run, a.Step.ID)
	attempt := strconv.Itoa(a.Attempt)
	res := runner.Run(ctx, spec, e.cfg.Runner, onStart, func(stream string, chunk []byte) {
		msg := &nats.Msg{Subject: subj, Data: chunk, Header: nats.Header{"Agentic-Stream": []string{stream}, "Agentic-Attempt": []string{attempt}}}
		_, _ = e.cfg.JS.PublishMsgAsync(msg)
	})
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
	e.mu.Lock()
	byOperator := t.operator
	e.mu.Unlock()
	if res.Status == event.TaskCancelled && !byOperator {
		// Killed by shutdown, not by an operator: report an interruption so
		// the orchestrator decides (re-run if idempotent).
		fin.Status, fin.Class = event.TaskFailed, event.ClassTransient
		fin.Error = orchestrator.InterruptedPrefix + ": the executor shut down during the attempt"
	}
	// Report even when ctx is cancelled: the outbox outlives the role.
	if err := e.env.Emit.Emit(context.WithoutCancel(ctx), event.MustDraft(event.TaskFinished, run, fin)); err != nil {
		e.log.Error("emit task.finished", "run", run, "step", a.Step.ID, "err", err)
		return
	}
	if err := e.state.MarkFinished(run, a.Step.ID, a.Attempt); err != nil {
		e.log.Error("mark finished", "run", run, "step", a.Step.ID, "attempt", a.Attempt, "err", err)
		e.fatal(err)
	}
}

// CommandHash identifies a command for statistics: 16 hex digits of sha256.
func CommandHash(cmd string) string {
	if cmd == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(cmd)))
	return hex.EncodeToString(sum[:8])
}
