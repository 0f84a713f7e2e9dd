package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// shell runs scripts in one step's environment.
type shell struct {
	cwd     string
	env     []string
	timeout time.Duration
	opts    Options
	// prefix sets the resource limits (Limits.prefix); cred is the user
	// (nil: the executor's).
	prefix string
	cred   *syscall.Credential
	// confined runs the scripts through the Landlock helper, writing only
	// beneath dirs.
	confined bool
	dirs     []string
	// argv, when set, is run instead of the shell: a program (its path
	// resolved) and its arguments (Spec.Args).
	argv []string
}

// outcome is what one script run gave.
type outcome struct {
	pid       int
	exitCode  int // -1 when not started or stopped by the runner
	timedOut  bool
	cancelled bool
	startErr  error
	waitErr   error
	tail      string
}

// exec runs script to its end, its timeout or ctx's cancellation, then stops
// whatever is left of its process group (background children included) and
// drains its output. The calling goroutine forks the step's shell and
// waits for it, locked to its thread meanwhile (see start); the timeout
// and the cancellation stop the group from their own goroutines, started
// only when they fire (see stopper).
func (sh shell) exec(ctx context.Context, script string, onStart func(int), onOutput func(string, []byte)) outcome {
	out := outcome{exitCode: -1}
	cp, err := newCapture(sh.opts.TailBytes, onOutput)
	if err != nil {
		out.startErr = err
		return out
	}
	cmd := command(sh.prefix+script, sh.cwd, sh.env, sh.cred, cp.outW, cp.errW)
	switch {
	case sh.argv != nil && sh.confined:
		cmd.path, cmd.args = selfExe, sandboxProgram(sh.dirs, sh.argv)
	case sh.argv != nil:
		cmd.path, cmd.args = sh.argv[0], sh.argv
	case sh.confined:
		cmd.path, cmd.args = selfExe, sandboxCommand(sh.dirs, sh.prefix+script)
	}
	runtime.LockOSThread()
	ch, err := start(cmd)
	if err != nil {
		runtime.UnlockOSThread()
		cp.abort()
		out.startErr = err
		return out
	}
	cp.start()
	out.pid = ch.pid
	if onStart != nil {
		onStart(ch.pid)
	}
	st := armStopper(ctx, sh.timeout, ch.pid, sh.opts.KillGrace, ch.done)
	ch.wait()
	runtime.UnlockOSThread()
	switch st.disarm() {
	case stopTimeout:
		out.timedOut = true
	case stopCancel:
		out.cancelled = true
	}
	stopGroup(ch.pid, sh.opts.KillGrace, ch.done)
	guardian.remove(ch.pid)
	cp.wait()
	out.tail = cp.tailString()
	if out.timedOut || out.cancelled {
		return out
	}
	out.exitCode, out.waitErr = ch.exitCode(), ch.waitErr()
	return out
}

// Why a stopper stopped a step's group.
const (
	stopNone int32 = iota
	stopTimeout
	stopCancel
	// stopReaped: the leader was reaped first; a timeout or a cancel
	// that comes later changes nothing.
	stopReaped
)

// stopper stops a running step's process group when its timeout passes
// or its context is cancelled, whichever comes first, from the goroutine
// of the timer or of context.AfterFunc: neither exists unless it fires.
type stopper struct {
	pid        int
	grace      time.Duration
	leaderDone <-chan struct{}
	why        atomic.Int32
	timer      *time.Timer
	unhook     func() bool
	// fired counts the callbacks that may still run: disarm waits for
	// them.
	fired sync.WaitGroup
}

func armStopper(ctx context.Context, timeout time.Duration, pid int, grace time.Duration, leaderDone <-chan struct{}) *stopper {
	s := &stopper{pid: pid, grace: grace, leaderDone: leaderDone}
	s.fired.Add(2)
	s.timer = time.AfterFunc(timeout, func() { s.fire(stopTimeout) })
	s.unhook = context.AfterFunc(ctx, func() { s.fire(stopCancel) })
	return s
}

// fire stops the group, unless the other callback did already.
func (s *stopper) fire(why int32) {
	defer s.fired.Done()
	if s.why.CompareAndSwap(stopNone, why) {
		stopGroup(s.pid, s.grace, s.leaderDone)
	}
}

// disarm keeps the callbacks that have not started from running, waits
// for those that have, and returns why the group was stopped (stopNone:
// it was not). Call it once the leader has been reaped: what came first,
// the leader's exit or a stop, decides.
func (s *stopper) disarm() int32 {
	reaped := s.why.CompareAndSwap(stopNone, stopReaped)
	if s.timer.Stop() {
		s.fired.Done()
	}
	if s.unhook() {
		s.fired.Done()
	}
	s.fired.Wait()
	if reaped {
		return stopNone
	}
	return s.why.Load()
}

// guard applies the Creates and Check guards. It returns true when the
// step must not run: skipped, or res already holds a failure.
func guard(ctx context.Context, res *Result, spec Spec, sh shell) bool {
	if spec.Creates != "" {
		path := spec.Creates
		if !filepath.IsAbs(path) {
			path = filepath.Join(sh.cwd, path)
		}
		if _, err := os.Stat(path); err == nil {
			res.skip(fmt.Sprintf("creates %s exists", path))
			return true
		}
	}
	if spec.Check == "" {
		return false
	}
	x := sh.exec(ctx, spec.Check, nil, nil)
	switch {
	case x.startErr != nil:
		res.fail(event.ClassTransient, "check: start: "+x.startErr.Error())
	case x.waitErr != nil:
		res.fail(event.ClassTransient, "check: wait: "+x.waitErr.Error())
	case x.timedOut:
		res.TimedOut = true
		res.fail(event.ClassTransient, fmt.Sprintf("check timed out after %s; killed process group %d", sh.timeout, x.pid))
	case x.cancelled:
		res.cancel(fmt.Sprintf("cancelled during check (%v); killed process group %d", context.Cause(ctx), x.pid))
	case x.exitCode == 0:
		res.skip("check exited 0")
	default:
		return false
	}
	return true
}

func (r *Result) skip(reason string) {
	r.Status, r.Reason = event.TaskSkipped, reason
}
