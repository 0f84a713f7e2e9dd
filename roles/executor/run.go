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
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go"
)

// run executes one attempt, recorded as started, and reports it: its
// task.started is queued when the process started, its task.finished when
// it ended, and run returns once the reporter has emitted the result and
// recorded the attempt finished.
func (e *Executor) run(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task) {
	spec := runner.Spec{Kind: a.Step.Kind, Command: a.Step.Run, Env: a.Step.Env, Cwd: a.Step.Cwd, Timeout: a.Step.Timeout.Std(), Creates: a.Step.Creates, Check: a.Step.Check}
	onStart := func(pid int) {
		e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, PID: pid}))
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
		fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
		fin.Error = orchestrator.InterruptedPrefix + ": the executor shut down during the attempt"
	}
	// The reporter logs a failure, and halts the executor on a failed
	// sync; the attempt then stays unfinished and is reported interrupted
	// by the next start.
	_ = e.report.finished(event.MustDraft(event.TaskFinished, run, fin), localstate.Attempt{Run: run, Step: a.Step.ID, Attempt: a.Attempt})
}

// CommandHash identifies a command for statistics: 16 hex digits of sha256.
func CommandHash(cmd string) string {
	if cmd == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(cmd)))
	return hex.EncodeToString(sum[:8])
}
