package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Run executes spec and reports its outcome; it never returns before every
// process of the step is gone (or given up on, see stopGroup) and onOutput
// has returned for the last time.
//
// onStart(pid) is called once the step's process started (nil ok; not
// called for the Check guard's process, nor when no process starts). onOutput
// receives redacted output chunks as they are produced, never concurrently
// and always from one goroutine (nil ok); it may keep the slice. A slow
// onOutput never blocks the step: chunks it cannot take in time are dropped
// from the stream with a notice, while OutputTail stays complete.
//
// Cancelling ctx stops the whole process group (SIGTERM, then SIGKILL after
// KillGrace) and yields Status cancelled; running out of Timeout does the
// same and yields failed with TimedOut.
func Run(ctx context.Context, spec Spec, opts Options, onStart func(pid int), onOutput func(stream string, chunk []byte)) Result {
	if spec.Kind == event.KindNoop {
		return noop(ctx)
	}
	res := Result{Started: time.Now(), User: currentUser()}
	run(ctx, &res, spec, opts.withDefaults(), onStart, onOutput)
	res.Duration = time.Since(res.Started)
	return res
}

// noop succeeds at once without forking or allocating.
func noop(ctx context.Context) Result {
	if ctx.Err() != nil {
		return Result{Status: event.TaskCancelled, Class: event.ClassTransient, Error: "cancelled before start", Started: time.Now()}
	}
	return Result{Status: event.TaskSucceeded, Started: time.Now()}
}

func run(ctx context.Context, res *Result, spec Spec, opts Options, onStart func(int), onOutput func(string, []byte)) {
	if spec.Kind != event.KindShell {
		res.fail(event.ClassLogic, fmt.Sprintf("unknown step kind %q", spec.Kind))
		return
	}
	if len(spec.Args) > 0 && (spec.Command != "" || spec.Check != "" || spec.Args[0] == "") {
		res.fail(event.ClassLogic, "a program run without a shell (Args) takes no command nor check, and needs a program name")
		return
	}
	if len(spec.Args) == 0 && strings.TrimSpace(spec.Command) == "" {
		res.fail(event.ClassLogic, "empty command")
		return
	}
	cwd, err := resolveCwd(spec.Cwd, opts.DefaultCwd)
	res.Cwd = cwd
	if err != nil {
		res.fail(event.ClassLogic, err.Error())
		return
	}
	as, err := resolveAccount(spec, opts)
	if err != nil {
		var re *runAsError
		if errors.As(err, &re) {
			res.fail(re.class, re.msg)
		} else {
			res.fail(event.ClassLogic, err.Error())
		}
		return
	}
	res.User = as.name
	env, err := buildEnv(opts.EnvAllow, spec.Env, cwd, &as)
	if err != nil {
		res.fail(event.ClassLogic, err.Error())
		return
	}
	if ctx.Err() != nil {
		res.cancel("cancelled before start")
		return
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = opts.DefaultTimeout
	}
	sh := shell{cwd: cwd, env: env, timeout: timeout, opts: opts, prefix: opts.Limits.prefix(), cred: as.cred}
	if len(spec.Args) > 0 {
		if sh.argv, err = programArgs(spec.Args); err != nil {
			res.fail(event.ClassLogic, err.Error())
			return
		}
		sh.prefix = ""
	}
	if opts.Landlock && spec.WriteScope != nil && LandlockABI() > 0 {
		home := as.home
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		sh.confined, sh.dirs = true, scopeDirs(spec.WriteScope, cwd, home)
	}
	if guard(ctx, res, spec, sh) {
		return
	}
	x := sh.exec(ctx, spec.Command, onStart, onOutput)
	res.PID, res.ExitCode, res.OutputTail = x.pid, x.exitCode, x.tail
	switch {
	case x.startErr != nil && errors.Is(x.startErr, fs.ErrPermission) && sh.cred != nil:
		// The kernel says only EACCES: most often the user cannot reach
		// the working directory (a parent without search permission).
		res.fail(event.ClassLogic, fmt.Sprintf("start: %v: as user %s, check that every directory down to the working directory %s is searchable (x) by that user", x.startErr, as.name, cwd))
	case x.startErr != nil:
		res.fail(event.ClassTransient, "start: "+x.startErr.Error())
	case x.waitErr != nil:
		res.fail(event.ClassTransient, "wait: "+x.waitErr.Error())
	case x.timedOut:
		res.TimedOut = true
		res.fail(event.ClassTransient, fmt.Sprintf("timed out after %s; killed process group %d", timeout, x.pid))
	case x.cancelled:
		res.cancel(fmt.Sprintf("cancelled (%v); killed process group %d", context.Cause(ctx), x.pid))
	case x.exitCode != 0:
		res.fail(event.ClassLogic, fmt.Sprintf("exit status %d", x.exitCode))
	default:
		res.Status = event.TaskSucceeded
	}
}

func (r *Result) fail(class event.FailureClass, msg string) {
	r.Status, r.Class, r.Error = event.TaskFailed, class, msg
	if r.ExitCode == 0 {
		r.ExitCode = -1
	}
}

func (r *Result) cancel(msg string) {
	r.Status, r.Class, r.Error = event.TaskCancelled, event.ClassTransient, msg
	r.ExitCode = -1
}
