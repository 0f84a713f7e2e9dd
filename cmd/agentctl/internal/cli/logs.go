package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

// Headers the executor sets on each output chunk (roles/executor).
const (
	headerStream  = "Agentic-Stream"
	headerAttempt = "Agentic-Attempt"
)

// logsQuiet is how long a followed run must have been finished and silent
// before run logs --follow stops by itself; in --follow a partial line is
// printed after that much silence too.
const logsQuiet = time.Second

// logsConsumerIdle is how long the server keeps the ephemeral consumer of
// an agentctl that vanished without deleting it.
const logsConsumerIdle = 30 * time.Second

type logsOpts struct {
	follow  bool
	attempt int
	stream  string
}

func (a *app) runLogsCmd() *cobra.Command {
	var o logsOpts
	cmd := &cobra.Command{
		Use:   "logs RUN [STEP]",
		Short: "Print the output of a run's steps, and follow it",
		Long: `Print what a run's steps wrote to stdout and stderr (redacted by the
executor), oldest first, from the AGENTIC_LOGS stream, and exit; with
--follow keep printing new output until Ctrl-C, or until the run has
finished and a second passed without output.

Without STEP every step's output is shown, each line behind its step id
("build | compiling..."); with STEP only that step's, unprefixed. When a
step ran more than once, a "--- attempt N ---" line marks where the next
attempt's output starts; --attempt N keeps one attempt, --stream one
stream. RUN may be any unique start or end of the run id.

-o jsonl prints one object per line of output: {"run","step","attempt",
"stream","line"}; -o json an array of them (not with --follow).`,
		Example: `  agentctl run logs 0190a3c2                    # every step, prefixed with its id
  agentctl run logs 0190a3c2 build --follow     # one step, live
  agentctl run logs 0190a3c2 test --attempt 2 --stream stderr
  agentctl run logs 0190a3c2 -o jsonl | jq -r 'select(.stream=="stderr") | .step + ": " + .line'`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			step := ""
			if len(argv) == 2 {
				step = argv[1]
			}
			if err := o.check(a.output, step); err != nil {
				return err
			}
			return a.runLogs(cmd.Context(), argv[0], step, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.follow, "follow", false, "keep printing new output (Ctrl-C to stop; stops by itself once the run has finished)")
	f.IntVar(&o.attempt, "attempt", 0, "only this attempt (1, 2, ...; 0: all)")
	f.StringVar(&o.stream, "stream", "", "only this stream: stdout or stderr")
	return cmd
}

func (o logsOpts) check(output, step string) error {
	if step != "" {
		// The step id goes into a subject filter: keep wildcards and empty
		// tokens out of it.
		if err := event.ValidStepID(step); err != nil {
			return usagef("%v", err)
		}
	}
	switch {
	case o.attempt < 0:
		return usagef("--attempt must not be negative, got %d", o.attempt)
	case o.stream != "" && o.stream != streamStdout && o.stream != streamStderr:
		return usagef("--stream %q: want stdout or stderr", o.stream)
	case o.follow && output == formatJSON:
		return usagef("-o json prints one array at the end and --follow has no end: use -o jsonl")
	}
	return nil
}

// logsRun is one run logs invocation once the run is resolved.
type logsRun struct {
	a      *app
	o      logsOpts
	client *api.Client
	run    *api.Run
	step   string
	filter string // subject filter: one step, or all of the run's
	stream jetstream.Stream
	p      *logPrinter
}

func (a *app) runLogs(ctx context.Context, id, step string, o logsOpts) error {
	err := a.runLogsErr(ctx, id, step, o)
	if o.follow && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // Ctrl-C ends a follow normally
	}
	return err
}

func (a *app) runLogsErr(ctx context.Context, id, step string, o logsOpts) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	run, err := c.RunsGet(ctx, id)
	if err != nil {
		return err
	}
	l := &logsRun{a: a, o: o, client: c, run: run, step: step, filter: bus.LogSubject(run.ID, ">")}
	var steps []string
	for _, s := range run.Steps {
		steps = append(steps, s.ID)
	}
	if step != "" {
		l.filter = bus.LogSubject(run.ID, step)
	}
	l.p = newLogPrinter(a, run.ID, step == "", steps)
	if l.stream, err = a.logsStream(ctx); err != nil {
		return err
	}
	l.p.cut = retentionCut(run, l.stream.CachedInfo())
	last, err := l.lastSeq(ctx)
	if err != nil {
		return err
	}
	if step != "" && last == 0 && len(steps) > 0 && !slices.Contains(steps, step) {
		return api.WithHint(fmt.Errorf("run %s has no step %q and no output for one", run.ID, step),
			"its steps: "+strings.Join(steps, ", "))
	}
	if last > 0 || o.follow {
		err := l.read(ctx, last)
		interrupted := o.follow && ctx.Err() != nil
		if err != nil && !interrupted {
			return err
		}
		if interrupted { // Ctrl-C: still print the partial lines
			return errors.Join(l.p.finish(), err)
		}
	}
	if err := l.p.finish(); err != nil {
		return err
	}
	if l.p.lines == 0 && a.output == formatText {
		what := "run " + run.ID
		if step != "" {
			what = "step " + step + " of " + what
		}
		if info := l.stream.CachedInfo(); info != nil && info.State.FirstSeq > 1 && run.CreatedAt.Before(info.State.FirstTime) {
			a.note("no output kept for %s%s: %s no longer holds what was written before %s (its limits dropped it); the ledger keeps each attempt's output tail (agentctl audit --run %s)",
				what, describeFilter(o), bus.LogsStream, info.State.FirstTime.UTC().Format(time.RFC3339), run.ID)
			return nil
		}
		a.note("no output recorded for %s%s", what, describeFilter(o))
	}
	return nil
}

func (a *app) logsStream(ctx context.Context) (jetstream.Stream, error) {
	nc, err := a.conn()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	st, err := js.Stream(sctx, bus.LogsStream)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrNoResponders) {
			return nil, api.WithHint(fmt.Errorf("no stream %s on %s: %w", bus.LogsStream, a.server, err),
				"agentd creates it when it starts; is --server (NATS_URL) the cluster's NATS?")
		}
		return nil, fmt.Errorf("stream %s: %w", bus.LogsStream, err)
	}
	return st, nil
}

// lastSeq is the stream sequence of the newest chunk the filter matches, 0
// when there is none.
func (l *logsRun) lastSeq(ctx context.Context) (uint64, error) {
	gctx, cancel := context.WithTimeout(ctx, l.a.timeout)
	defer cancel()
	m, err := l.stream.GetLastMsgForSubject(gctx, l.filter)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("logs of run %s: last chunk on %s: %w", l.run.ID, l.filter, err)
	}
	return m.Sequence, nil
}

// read prints the matching chunks from the start of the stream: up to
// sequence last, or with --follow until ctx ends or the run is done.
func (l *logsRun) read(ctx context.Context, last uint64) error {
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{l.filter},
		InactiveThreshold: logsConsumerIdle,
	})
	if err != nil {
		return fmt.Errorf("logs of run %s: consumer: %w", l.run.ID, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("logs of run %s: consumer: %w", l.run.ID, err)
	}
	defer l.closeConsumer(ctx, it, cons)
	wait := l.a.timeout // without --follow: output that vanished (age limit) ends the read
	if l.o.follow {
		wait = l.a.poll
	}
	var seen uint64 // stream sequence of the last chunk delivered
	lastChunk, lastCheck := time.Now(), time.Time{}
	for l.o.follow || seen < last {
		nctx, cancel := context.WithTimeout(ctx, wait)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			if !l.o.follow {
				return nil
			}
			if time.Since(lastChunk) < logsQuiet {
				continue
			}
			if err := l.p.flush(); err != nil {
				return err
			}
			if time.Since(lastCheck) >= logsQuiet {
				lastCheck = time.Now()
				if l.done(ctx, seen) {
					return nil
				}
			}
			continue
		case err != nil:
			return fmt.Errorf("logs of run %s: %w", l.run.ID, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("logs of run %s: %w", l.run.ID, err)
		}
		seen, lastChunk = md.Sequence.Stream, time.Now()
		if err := l.chunk(m); err != nil {
			return err
		}
		if !l.o.follow && md.NumPending == 0 {
			return nil // the rest up to last is gone (age or size limit)
		}
	}
	return nil
}

// done reports whether a followed run has finished and every chunk it
// stored has been delivered. A failed check is not fatal: keep following.
func (l *logsRun) done(ctx context.Context, seen uint64) bool {
	run, err := l.client.RunSummary(ctx, l.run.ID)
	if err != nil || !finished(run.Status) {
		return false
	}
	last, err := l.lastSeq(ctx)
	return err == nil && seen >= last
}

// chunk hands one message to the printer, if the filters keep it.
func (l *logsRun) chunk(m jetstream.Msg) error {
	attempt, _ := strconv.Atoi(m.Headers().Get(headerAttempt))
	stream := m.Headers().Get(headerStream)
	if stream == "" {
		stream = streamStdout
	}
	if (l.o.attempt > 0 && attempt != l.o.attempt) || (l.o.stream != "" && stream != l.o.stream) {
		return nil
	}
	step := strings.TrimPrefix(m.Subject(), bus.LogSubject(l.run.ID, ""))
	return l.p.chunk(logKey{step: step, attempt: attempt, stream: stream}, m.Data())
}

// closeConsumer stops the iterator and deletes the ephemeral consumer
// rather than leave it to the server's inactivity timer.
func (l *logsRun) closeConsumer(ctx context.Context, it jetstream.MessagesContext, cons jetstream.Consumer) {
	it.Stop()
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.a.timeout)
	defer cancel()
	_ = l.stream.DeleteConsumer(dctx, info.Name)
}

// retentionCut returns the logPrinter's cut test for run against the logs
// stream as info shows it: when the stream has dropped messages (its
// first sequence is past 1) and the oldest one it keeps was stored after
// an attempt began (the step's StartedAt for its last attempt, the run's
// creation for earlier ones), that attempt's output from before then may
// be gone, and run logs says so where its kept output begins. Output
// written after the oldest kept message is whole. nil when nothing was
// dropped.
func retentionCut(run *api.Run, info *jetstream.StreamInfo) func(logKey) string {
	if info == nil || info.State.FirstSeq <= 1 || info.State.FirstTime.IsZero() {
		return nil
	}
	oldest := info.State.FirstTime
	limits := []string{}
	if c := info.Config; c.MaxBytes > 0 {
		limits = append(limits, settings.FormatBytes(c.MaxBytes))
	}
	if c := info.Config; c.MaxAge > 0 {
		limits = append(limits, settings.FormatAge(c.MaxAge))
	}
	if c := info.Config; c.MaxMsgs > 0 {
		limits = append(limits, strconv.FormatInt(c.MaxMsgs, 10)+" messages")
	}
	kept := ""
	if len(limits) > 0 {
		kept = " (it keeps " + strings.Join(limits, " or ") + ")"
	}
	return func(k logKey) string {
		began := run.CreatedAt
		for _, s := range run.Steps {
			if s.ID == k.step && s.Attempt == k.attempt && s.StartedAt != nil {
				began = *s.StartedAt
			}
		}
		if began.IsZero() || !began.Before(oldest) {
			return ""
		}
		return fmt.Sprintf("earlier output of %s (attempt %d, %s) may be missing: %s no longer holds what was written before %s%s; the ledger keeps each attempt's output tail (agentctl audit --run %s, task.finished)",
			k.step, k.attempt, k.stream, bus.LogsStream, oldest.UTC().Format(time.RFC3339), kept, run.ID)
	}
}
