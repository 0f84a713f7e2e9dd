package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// drains its output.
func (sh shell) exec(ctx context.Context, script string, onStart func(int), onOutput func(string, []byte)) outcome {
	out := outcome{exitCode: -1}
	cp, err := newCapture(sh.opts.TailBytes, onOutput)
	if err != nil {
		out.startErr = err
		return out
	}
	timer := time.NewTimer(sh.timeout)
	defer timer.Stop()
	cmd := command(sh.prefix+script, sh.cwd, sh.env, sh.cred, cp.outW, cp.errW)
	if sh.confined {
		cmd.Path, cmd.Args = selfExe, sandboxCommand(sh.dirs, sh.prefix+script)
	}
	ch, err := start(cmd)
	if err != nil {
		cp.abort()
		out.startErr = err
		return out
	}
	cp.start()
	out.pid = ch.pid
	if onStart != nil {
		onStart(ch.pid)
	}
	select {
	case <-ch.done:
	case <-timer.C:
		out.timedOut = true
	case <-ctx.Done():
		out.cancelled = true
	}
	stopGroup(ch.pid, sh.opts.KillGrace, ch.done)
	<-ch.done
	guardian.remove(ch.pid)
	cp.wait()
	out.tail = cp.tailString()
	if out.timedOut || out.cancelled {
		return out
	}
	out.exitCode, out.waitErr = ch.exitCode(), ch.waitErr()
	return out
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
