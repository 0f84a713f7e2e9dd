package runner

import (
	"os"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Spec is one step to run.
type Spec struct {
	// Kind is event.KindShell or event.KindNoop.
	Kind event.StepKind
	// Command is the shell script, run by /bin/sh -c.
	Command string
	// Args, when set, is a program and its arguments, run directly — no
	// shell parses anything — in place of Command (which must be empty):
	// Args[0] is found in agentd's PATH when it has no '/'. The Check
	// guard and Limits, which the shell sets, do not apply to it; the
	// user, environment, working directory, timeout, process group and
	// output capture are a shell step's. The executor runs git this way.
	Args []string
	// Env is added to the inherited environment (Options.EnvAllow); it
	// wins over inherited values.
	Env map[string]string
	// Cwd is the working directory; "" means Options.DefaultCwd, and a
	// relative path is taken relative to Options.DefaultCwd.
	Cwd string
	// Timeout bounds the run; 0 means Options.DefaultTimeout.
	Timeout time.Duration
	// Creates is a guard: if this path (relative to Cwd) exists, the step is
	// skipped without running.
	Creates string
	// Check is a guard: if this shell command exits 0, the step is skipped.
	// It runs like the step (same env, cwd and timeout), its output is not
	// captured.
	Check string
	// RunAs is the user the step runs as (a name or a numeric id); ""
	// means Options.RunAs.
	RunAs string
	// WriteScope are the file scope globs of the policy (scopes.files)
	// the step may write in: with Options.Landlock, on a kernel that
	// offers Landlock, the step's processes cannot write anywhere else
	// (see scopeDirs). Nil: the step is not confined.
	WriteScope []string
}

// Options are the runner's defaults. The zero value is usable: every zero
// field takes the value DefaultOptions gives it.
type Options struct {
	// DefaultTimeout applies to steps without a timeout (default 1h).
	DefaultTimeout time.Duration
	// DefaultCwd is the working directory of steps without one (default the
	// process's working directory).
	DefaultCwd string
	// TailBytes is how much of the end of the output Result keeps (default
	// 4 KiB).
	TailBytes int
	// KillGrace is the time between SIGTERM and SIGKILL when the runner
	// stops a process group (default 2s).
	KillGrace time.Duration
	// EnvAllow names the variables a step inherits from the executor's
	// environment (a trailing * matches a prefix); nil means
	// DefaultEnvAllow, an empty list none.
	EnvAllow []string
	// Limits are resource limits set in every step's processes.
	Limits Limits
	// RunAs is the user steps run as when their Spec names none (a name or
	// a numeric id); "" runs them as the executor's own user. Running as
	// another user needs the executor to be root.
	RunAs string
	// RefuseRoot refuses to run steps as root when the executor runs as
	// root, unless RunAs names root: a step that would run as root by
	// default, or that asks for root itself, fails with class policy.
	RefuseRoot bool
	// Landlock confines the writes of steps that have a WriteScope to it,
	// where the kernel offers Landlock (LandlockABI); elsewhere they run
	// unconfined.
	Landlock bool
}

// Defaults for Options.
const (
	DefaultTimeout   = time.Hour
	DefaultTailBytes = 4 << 10
	DefaultKillGrace = 2 * time.Second
)

// DefaultOptions returns Options with every field filled.
func DefaultOptions() Options {
	return Options{}.withDefaults()
}

func (o Options) withDefaults() Options {
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.DefaultCwd == "" {
		if wd, err := os.Getwd(); err == nil {
			o.DefaultCwd = wd
		}
	}
	if o.TailBytes <= 0 {
		o.TailBytes = DefaultTailBytes
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	return o
}

// Output stream names passed to onOutput.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// Result is the outcome of one Run.
type Result struct {
	// Status is event.TaskSucceeded, TaskFailed, TaskSkipped or
	// TaskCancelled.
	Status event.TaskStatus
	// Class is "" on success and skip; event.ClassLogic for a non-zero exit
	// or a step that cannot run as written (unknown kind, empty command, bad
	// cwd or env); event.ClassTransient for a timeout, a cancellation or a
	// failure to start the process.
	Class event.FailureClass
	// ExitCode is the script's exit status; a script whose shell dies of
	// signal N — its own last command, which the shell may have become, or
	// a signal from outside the runner — exits 128+N, the shell's
	// convention. It is -1 when the runner stopped the step (timeout,
	// cancel) or none started. 0 for succeeded, skipped and noop results.
	ExitCode int
	// TimedOut is true when the step (or its check) ran out of time.
	TimedOut bool
	// Error says what went wrong for an operator ("exit status 2", "timed
	// out after 30s; killed process group 1234"); "" on success.
	Error string
	// Reason says why a step was skipped ("creates /srv/x exists", "check
	// exited 0").
	Reason string
	// Started is when Run began; Duration how long it took, guards included.
	Started  time.Time
	Duration time.Duration
	// Cwd is the absolute working directory; User the name of the user
	// the step ran (or would have run) as. Both are empty for noop steps.
	Cwd, User string
	// PID is the step's process id, which is also its process group id; 0
	// when no process was started.
	PID int
	// OutputTail is the last TailBytes of combined stdout and stderr,
	// redacted.
	OutputTail string
}
