package executor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/executor/pluginhost"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/nats-io/nats.go"
)

// Plugins is where an executor learns the plugins in force and runs
// their tools (docs/plugins.md).
type Plugins struct {
	// List returns the plugins in force (plugins.list of the query API);
	// nil: the executor runs no plugins, and fails tool steps.
	List func(ctx context.Context) ([]plugin.View, error)
	// Every is how often List is asked when no plugin event arrives
	// (default DefaultPluginSync): a backstop for an event the executor
	// did not receive. The executor reads the plugins again as soon as
	// a plugin.added, plugin.approved or plugin.removed is published.
	Every time.Duration
	// Host configures the plugin host; its Runner is the executor's.
	Host pluginhost.Config
	// Policy, if set, returns the policy in force: a server whose
	// grants.network its scopes.network does not allow is not started.
	// (A call is judged with its step's policy version, always.)
	Policy func(ctx context.Context) (*policy.Policy, error)
}

// DefaultPluginSync is Plugins.Every's default.
const DefaultPluginSync = time.Minute

// Reading again after a plugin event: the plugins source (a ledger node's
// index) has the event a little after it is published, so the executor
// reads until it sees a change, waiting pluginRetryFirst, then twice as
// long each time up to pluginRetryMax, for pluginRetryFor at most.
const (
	pluginRetryFirst = 50 * time.Millisecond
	pluginRetryMax   = time.Second
	pluginRetryFor   = 15 * time.Second
)

// startTools starts the plugin host and the goroutine that follows the
// plugins in force and announces the executor's tools again when they
// change (executor.online with the same incarnation). Called by Start;
// the goroutine ends with the loop, and Stop stops the host once no step
// runs (stopTools).
func (e *Executor) startTools(ctx context.Context) {
	if e.cfg.Plugins.List == nil {
		return
	}
	hc := e.cfg.Plugins.Host
	hc.Runner, hc.Version = e.cfg.Runner, e.cfg.Version
	if hc.Logger == nil {
		hc.Logger = e.log.With("component", "plugins")
	}
	if get := e.cfg.Plugins.Policy; get != nil && hc.Network == nil {
		hc.Network = func(ctx context.Context) (func(string) (bool, string), error) {
			p, err := get(ctx)
			if err != nil {
				return nil, err
			}
			return p.NetworkAllowed, nil
		}
	}
	e.tools = pluginhost.New(hc)
	every := e.cfg.Plugins.Every
	if every <= 0 {
		every = DefaultPluginSync
	}
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		e.followPlugins(every)
	}()
}

// pluginSubjects are the subjects of the plugin events: their publication
// wakes the executor (their content is not trusted: it only makes the
// executor read the plugins in force from a ledger node).
var pluginSubjects = event.SubjectPrefix + "plugin.*"

// followPlugins syncs the host with the plugins in force when a plugin
// event is published (and every interval, as a backstop), and announces
// the tools whenever the host says they changed.
func (e *Executor) followPlugins(every time.Duration) {
	failing, last := "", ""
	// While the node starts, no ledger node may answer yet (its own query
	// API comes up beside the executor): "no responders" is retried
	// quietly for pluginRetryFor before it is worth a warning.
	quietUntil := time.Now().Add(pluginRetryFor)
	quiet := false // the last read failed within quietUntil
	// sync reads the plugins in force and syncs the host; it reports
	// whether they differ from the last read.
	sync := func() bool {
		ctx, cancel := context.WithTimeout(e.loopCtx, 10*time.Second)
		defer cancel()
		views, err := e.cfg.Plugins.List(ctx)
		if err != nil {
			// Logged once per kind of failure, not every interval.
			var nr *apiwire.NoResponderError
			if errors.As(err, &nr) && time.Now().Before(quietUntil) {
				e.log.Debug("plugins in force: no ledger node answers yet", "err", err)
				quiet = true
				return false
			}
			if e.loopCtx.Err() == nil && err.Error() != failing {
				e.log.Warn("plugins in force: cannot read them; servers stay as they are", "err", err)
			}
			failing = err.Error()
			return false
		}
		failing, quiet = "", false
		fp := pluginsFingerprint(views)
		changed := fp != last
		last = fp
		e.tools.Sync(views)
		return changed
	}
	wake := make(chan *nats.Msg, 64)
	if nc := e.cfg.JS.Conn(); nc != nil {
		sub, err := nc.ChanSubscribe(pluginSubjects, wake)
		if err != nil {
			e.log.Warn("plugin events: cannot subscribe; the plugins in force are read every interval only", "every", every, "err", err)
		} else {
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var delay time.Duration
	var until time.Time
	starting := false // retrying a read that failed at start
	if sync(); failing != "" || quiet {
		// Not read at start: read again soon, as after a wake, rather
		// than a whole interval later.
		delay, until, starting = pluginRetryFirst, quietUntil, true
		retry.Reset(delay)
	}
	for {
		select {
		case <-e.loopCtx.Done():
			return
		case <-t.C:
			sync()
		case <-wake:
			for len(wake) > 0 {
				<-wake
			}
			if sync() {
				continue
			}
			delay, until, starting = pluginRetryFirst, time.Now().Add(pluginRetryFor), false
			retry.Reset(delay)
		case <-retry.C:
			changed := sync()
			if starting && failing == "" && !quiet {
				starting = false // read: nothing to wait for
				continue
			}
			if changed || time.Now().After(until) {
				continue
			}
			delay = min(2*delay, pluginRetryMax)
			retry.Reset(delay)
		case <-e.tools.Changed():
			e.announce(e.loopCtx)
		}
	}
}

// pluginsFingerprint says what of views the host acts on: each plugin's
// manifest hash and pinned definition hashes.
func pluginsFingerprint(views []plugin.View) string {
	var b strings.Builder
	for _, v := range views {
		b.WriteString(v.Name + "\x00" + v.ManifestHash + "\x00")
		for _, t := range v.Tools {
			if t.Pin != nil {
				b.WriteString(t.Name + "=" + t.Pin.Hash + "\x00")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// syncPlugins reads the plugins in force now and syncs the host; it
// reports whether it could.
func (e *Executor) syncPlugins(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	views, err := e.cfg.Plugins.List(ctx)
	if err != nil {
		return false
	}
	e.tools.Sync(views)
	return true
}

// stopTools stops the plugin servers (Stop, once no step runs).
func (e *Executor) stopTools() {
	if e.tools != nil {
		e.tools.Stop()
	}
}

// announce emits executor.online with the tools the host reports now.
func (e *Executor) announce(ctx context.Context) {
	tools, plugins := e.tools.Report()
	d := event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{
		Slots: e.cfg.Slots, Queue: e.cfg.Queue, Capabilities: e.cfg.Capabilities, Version: e.cfg.Version, Incarnation: e.cfg.Incarnation,
		Tools: tools, Plugins: plugins,
	})
	if err := e.env.Emit.Emit(ctx, d); err != nil && ctx.Err() == nil {
		e.log.Warn("executor.online with tools not emitted", "err", err)
	}
}

// runTool runs a tool step (event.KindTool) through the plugin host: its
// task.started without a process, then the call, its result recorded like
// output (redacted and bounded by the host, the tail in task.finished,
// the whole to the step's log subject).
func (e *Executor) runTool(ctx context.Context, run string, a event.TaskAssignedData, started time.Time, t *task, j judged) event.Draft {
	e.report.started(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node}))
	fin := event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node, Started: time.Now().UTC(), CommandHash: CommandHash(a.Step.Tool)}
	if started.After(fin.Started) {
		fin.Started = started
	}
	var res pluginhost.Result
	if e.tools == nil {
		res = pluginhost.Result{Status: event.TaskFailed, Class: event.ClassLogic,
			Error: "this executor runs no plugins (its node has no plugin source): tool " + a.Step.Tool + " cannot run here"}
	} else {
		c := pluginhost.Call{Tool: a.Step.Tool, Args: a.Step.Args, User: a.Step.RunAs, Timeout: a.Step.Timeout.Std(),
			Judge: toolJudge(a, j)}
		if j.p != nil {
			c.Network = j.p.NetworkAllowed
		}
		res = e.tools.Call(ctx, c)
		if res.Unpinned && e.syncPlugins(ctx) {
			// The pins followed every few seconds may be older than the
			// approval: judge again with the ones in force now.
			res = e.tools.Call(ctx, c)
		}
	}
	fin.Duration = event.Duration(time.Since(fin.Started))
	fin.Status, fin.Class, fin.Error, fin.TimedOut, fin.User = res.Status, res.Class, res.Error, res.TimedOut, res.User
	fin.ExitCode = 0
	if res.Status != event.TaskSucceeded {
		fin.ExitCode = -1
	}
	fin.OutputTail = tail(res.Output, e.cfg.Runner.TailBytes)
	if res.Output != "" {
		attempt := strconv.Itoa(a.Attempt)
		for _, chunk := range chunks(res.Output, logChunkBytes) {
			msg := &nats.Msg{Subject: bus.LogSubject(run, a.Step.ID), Data: []byte(chunk),
				Header: nats.Header{"Agentic-Stream": []string{"stdout"}, "Agentic-Attempt": []string{attempt}}}
			_, _ = e.cfg.JS.PublishMsgAsync(msg)
		}
	}
	if res.Status == event.TaskCancelled {
		if !cancelledByOperator(ctx) {
			fin.Status, fin.Class, fin.Interrupted = event.TaskFailed, event.ClassTransient, true
			fin.Error = event.LegacyInterruptedPrefix + ": the executor shut down during the tool call"
		}
	}
	return event.MustDraft(event.TaskFinished, run, fin)
}

// toolJudge judges a tool call again before it is made, as vet judged
// the step — but knowing what vet could not: the annotations of the
// tool's pinned definition and the paths its arguments name
// (policy.JudgeTool with facts). A call the policy denies, or that
// needs an approval the assignment does not carry, is refused.
func toolJudge(a event.TaskAssignedData, j judged) func(event.ToolDefinition, []plugin.PathArg) error {
	return func(def event.ToolDefinition, paths []plugin.PathArg) error {
		if a.ToolHash != "" {
			h, err := plugin.DefinitionHash(def)
			if err != nil {
				return err
			}
			if h != a.ToolHash {
				return fmt.Errorf("the definition of %s pinned now (%s) is not the one the step was judged and approved with (%s): "+
					"the leader judges it again with the new one", a.Step.Tool, h, a.ToolHash)
			}
		}
		if j.p == nil {
			return nil // no policy version named (an older leader): as vet
		}
		f := &policy.ToolFacts{Annotations: def.Annotations}
		for _, p := range paths {
			f.Paths = append(f.Paths, policy.ToolPath{Where: p.Where, Path: p.Path})
		}
		v := j.p.JudgeTool(a.Step, f)
		switch {
		case v.Action == policy.Allow:
			return nil
		case v.Action == policy.Deny:
			return fmt.Errorf("policy version %d denies it: rule %s (level %s): %s", j.p.Version, v.Rule, v.Level, v.Why)
		case j.approved:
			return nil
		}
		return fmt.Errorf("policy version %d asks for approval (rule %s, level %s: %s), and the assignment carries none for this tool, "+
			"these arguments and this definition", j.p.Version, v.Rule, v.Level, v.Why)
	}
}

// tail is the last n bytes of s (n <= 0: the runner's default), cut at a
// character's start.
func tail(s string, n int) string {
	if n <= 0 {
		n = runner.DefaultTailBytes
	}
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
