package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/agentic-dev/agentic/roles/research"
	"github.com/nats-io/nats.go"
)

// runResearch runs a research step (event.KindResearch): it fetches the
// step's sources in this process (roles/research), each judged by the
// scopes.network of the policy version the assignment names — before
// the request and at every redirect — and streamed into the store of
// sources while hashed. Its task.finished carries the sources fetched
// (Sources), and each is recorded as an artifact of the run
// (artifact.stored, research/<step>/<index>, with its URL and time)
// ahead of it; its output lists them, one JSON object a line. A source
// refused by the policy fails the step with class policy and a located
// reason; one that cannot be fetched fails it with class transient.
//
// The fetch runs in the executor's process, not as the step's user: it
// runs no program of the plan's, its bytes go straight to the Object
// Store over the executor's own connection and never to a file the
// step's user could change, and every hop is judged by the same policy
// in the same process.
func (e *Executor) runResearch(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, j judged) event.Draft {
	e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node}))
	fin := event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, Status: event.TaskSucceeded, Started: time.Now().UTC()}
	if started.After(fin.Started) {
		fin.Started = started
	}
	allow := func(hp string) (bool, string) {
		if j.p == nil {
			return false, "the assignment names no policy version, so scopes.network cannot be judged and no host may be reached"
		}
		return j.p.NetworkAllowed(hp)
	}
	var srcs []event.ResearchSource
	st, err := e.arts.get(ctx, e.cfg.JS) // artifacts.go
	if err == nil {
		f := research.Fetcher{Store: st, Allow: allow, Timeout: a.Step.Timeout.Std(), MaxBytes: sourceCap(j)}
		// Each source is reserved in the run's artifact total before it
		// is stored, as a step's outputs are (putOutput).
		var budgets policy.Budgets
		if j.p != nil {
			budgets = j.p.Budgets
		}
		_, perRun := budgets.ArtifactCaps()
		f.Reserve = func(ctx context.Context, n int64) error {
			_, err := st.Reserve(ctx, run, n, a.ArtifactBytes, perRun)
			if errors.Is(err, artifact.ErrRunFull) {
				err = fmt.Errorf("%w (budgets.run_artifact_bytes)", err)
			}
			return err
		}
		f.Release = func(ctx context.Context, n int64) {
			releaseReserved(ctx, st, run, n, e.log.With("step", a.Step.ID))
		}
		srcs, err = f.Fetch(ctx, a.Step)
	} else {
		err = fmt.Errorf("research step %s: the artifact store: %w", a.Step.ID, err)
	}
	for _, s := range srcs {
		// Each source is an artifact of the run, queued ahead of the
		// attempt's task.finished.
		e.report.note(event.MustDraft(event.ArtifactStored, run, event.ArtifactStoredData{
			Name: research.ArtifactName(a.Step.ID, s.Index), Size: s.Size, SHA256: s.SHA256, Object: s.Object,
			Step: a.Step.ID, Attempt: a.Attempt, Retention: event.RetentionRun,
			Meta: map[string]string{"url": s.URL, "fetched": s.Fetched},
		}))
	}
	fin.Duration = event.Duration(time.Since(fin.Started))
	var out strings.Builder
	for _, s := range srcs {
		line, _ := json.Marshal(s)
		out.Write(line)
		out.WriteByte('\n')
	}
	if err != nil {
		fin.Status, fin.ExitCode, fin.Error = event.TaskFailed, -1, redact.Redact(err.Error())
		fin.Class = event.ClassTransient
		switch {
		case errors.Is(err, research.ErrRefused):
			fin.Class = event.ClassPolicy
		case errors.Is(err, artifact.ErrRunFull):
			fin.Class = event.ClassLogic // a retry would meet the cap again
		case ctx.Err() != nil:
			fin.Status, fin.Class, fin.ExitCode, fin.Error = event.TaskCancelled, "", 0, "cancelled during the fetch"
			if !cancelledByOperator(ctx) {
				fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
				fin.Error = event.LegacyInterruptedPrefix + ": the executor shut down during the fetch"
			}
		}
		fmt.Fprintf(&out, "%s\n", fin.Error)
	} else {
		fin.Sources = srcs
	}
	text := out.String()
	fin.OutputTail = tail(text, e.cfg.Runner.TailBytes)
	attempt := strconv.Itoa(a.Attempt)
	for _, chunk := range chunks(text, logChunkBytes) {
		msg := &nats.Msg{Subject: bus.LogSubject(run, a.Step.ID), Data: []byte(chunk),
			Header: nats.Header{"Agentic-Stream": []string{"stdout"}, "Agentic-Attempt": []string{attempt}}}
		_, _ = e.cfg.JS.PublishMsgAsync(msg)
	}
	return event.MustDraft(event.TaskFinished, run, fin)
}

// sourceCap bounds one source: event.MaxSourceBytes, or the policy's
// cap of one artifact (budgets.artifact_bytes) when smaller.
func sourceCap(j judged) int64 {
	if j.p == nil {
		return event.MaxSourceBytes
	}
	per, _ := j.p.Budgets.ArtifactCaps()
	return min(int64(event.MaxSourceBytes), per)
}
