package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/bus/redact"
)

// ServerSpec is a long-running program a step user runs, talking over its
// standard input and output: a plugin's MCP server (roles/executor/plugin).
// It runs under the rules of a step — as the step user (RunAs, refused
// alike), with the scrubbed environment, the resource limits, in its own
// process group killed with the executor, confined by Landlock to
// WriteScope where the kernel offers it — but lives until Stop.
type ServerSpec struct {
	// Argv is the program and its arguments, run without a shell
	// interpreting them: Argv[0] is an absolute path or a program on the
	// PATH of the server's environment.
	Argv []string
	// RunAs is the user it runs as; "" means Options.RunAs.
	RunAs string
	// EnvAllow narrows the inherited environment: a variable is passed on
	// only when it is on Options.EnvAllow and on EnvAllow (PATH, HOME and
	// the account's USER and LOGNAME are always set). Nil passes none
	// beyond those.
	EnvAllow []string
	// Env is added to the environment.
	Env map[string]string
	// WriteScope confines the server's writes (Landlock) like a step's;
	// nil: not confined.
	WriteScope []string
	// NoNetwork starts the server in a network namespace of its own
	// (CLONE_NEWNET), which holds no interface but a loopback that is
	// down: it reaches no host. Where the kernel refuses the executor a
	// namespace (an unprivileged executor, a container without the
	// right), the server starts in the executor's network and
	// Server.NetworkShared says so.
	NoNetwork bool
}

// serverBase are the variables a server inherits, when Options.EnvAllow
// allows them, whatever its EnvAllow says.
var serverBase = []string{"PATH", "LANG", "LC_*", "TZ", "TMPDIR"}

// Server is a started server process, the leader of its own process
// group. Read its output from Stdout and write to Stdin; Stop ends it.
type Server struct {
	// PID is the server's process id and group.
	PID int
	// NetworkShared is set when ServerSpec.NoNetwork asked for a network
	// namespace of its own and the kernel refused it: the server runs in
	// the executor's network.
	NetworkShared bool
	// User is the user it runs as.
	User string
	// Stdin writes to the server's standard input; Stdout reads its
	// standard output. Stop closes both.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	grace time.Duration
	// done is closed once the leader exited and was reaped; exit is its
	// status then.
	done     chan struct{}
	exit     int
	stderr   chan struct{} // closed when the stderr reader returned
	errR     *os.File
	stopOnce sync.Once
}

// StartServer starts spec. onStderr receives the server's standard
// error, redacted, chunk by chunk from one goroutine (nil: discarded).
// The server lives until Stop, its own exit, or the executor's death
// (the parent-death signal and the group guard, as for a step).
func StartServer(spec ServerSpec, opts Options, onStderr func(string)) (*Server, error) {
	opts = opts.withDefaults()
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("runner: server: empty command")
	}
	as, err := resolveAccount(Spec{RunAs: spec.RunAs}, opts)
	if err != nil {
		return nil, fmt.Errorf("runner: server: %w", err)
	}
	allow := opts.EnvAllow
	if allow == nil {
		allow = DefaultEnvAllow
	}
	var inherit []string
	for _, kv := range os.Environ() {
		k, _, _ := cutEnv(kv)
		if EnvAllowed(allow, k) && (EnvAllowed(serverBase, k) || EnvAllowed(spec.EnvAllow, k)) {
			inherit = append(inherit, k)
		}
	}
	if inherit == nil {
		inherit = []string{}
	}
	const cwd = "/"
	env, err := buildEnv(inherit, spec.Env, cwd, &as)
	if err != nil {
		return nil, fmt.Errorf("runner: server: %w", err)
	}
	if as.cred == nil {
		home := os.Getenv("HOME")
		if home == "" {
			home = "/"
		}
		env = append(env, "HOME="+home)
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("runner: server: stdin pipe: %w", err)
	}
	files = append(files, inR, inW)
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("runner: server: stdout pipe: %w", err)
	}
	files = append(files, outR, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("runner: server: stderr pipe: %w", err)
	}
	files = append(files, errR, errW)
	// The shell sets the limits, then becomes the server: "$0" "$@" are
	// Argv, never interpreted.
	script := opts.Limits.prefix() + `exec "$0" "$@"`
	p := command(script, cwd, env, as.cred, outW, errW)
	p.stdin = inR
	p.args = append(p.args, spec.Argv...)
	if opts.Landlock && spec.WriteScope != nil && LandlockABI() > 0 {
		home := as.home
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		p.path, p.args = selfExe, append(sandboxCommand(scopeDirs(spec.WriteScope, cwd, home), script), spec.Argv...)
	}
	if spec.NoNetwork {
		p.sys.Cloneflags |= syscall.CLONE_NEWNET
	}
	s := &Server{User: as.name, Stdin: inW, Stdout: outR, grace: opts.KillGrace,
		done: make(chan struct{}), stderr: make(chan struct{}), errR: errR}
	started := make(chan error, 1)
	// The fork happens on a thread locked for the server's lifetime
	// (see start): its goroutine waits for the server and ends with it.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ch, err := start(p)
		if err != nil && spec.NoNetwork && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC)) {
			// No namespace for this executor: the server shares its
			// network (the caller says so, loudly).
			p.sys.Cloneflags &^= syscall.CLONE_NEWNET
			s.NetworkShared = true
			ch, err = start(p)
		}
		if err != nil {
			started <- err
			return
		}
		s.PID = ch.pid
		started <- nil
		ch.wait()
		s.exit = ch.exitCode()
		close(s.done)
	}()
	err = <-started
	// The child's ends belong to the child now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		_ = errR.Close()
		return nil, fmt.Errorf("runner: server: start %s: %w", spec.Argv[0], err)
	}
	go s.readStderr(onStderr)
	return s, nil
}

// cutEnv splits NAME=value.
func cutEnv(kv string) (k, v string, ok bool) {
	for i := 1; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// readStderr hands the server's standard error to onStderr, redacted
// line by line, until the pipe closes.
func (s *Server) readStderr(onStderr func(string)) {
	defer close(s.stderr)
	lr := redact.NewStream()
	buf := make([]byte, 8<<10)
	for {
		n, err := s.errR.Read(buf)
		if n > 0 && onStderr != nil {
			if out := lr.Write(buf[:n]); len(out) > 0 {
				onStderr(out)
			}
		}
		if err != nil {
			if out := lr.Flush(); len(out) > 0 && onStderr != nil {
				onStderr(out)
			}
			return
		}
	}
}

// Done is closed once the server process exited (and was reaped).
func (s *Server) Done() <-chan struct{} { return s.done }

// ExitCode is the server's exit status once Done is closed (128+N for a
// signal N), -1 before.
func (s *Server) ExitCode() int {
	select {
	case <-s.done:
		return s.exit
	default:
		return -1
	}
}

// Stop ends the server: it closes its input, signals its process group
// (SIGTERM, then SIGKILL after Options.KillGrace), waits until the
// leader is reaped, and closes the pipes. Idempotent; safe to call
// concurrently.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.Stdin.Close()
		stopGroup(s.PID, s.grace, s.done)
		<-s.done
		guardian.remove(s.PID)
		_ = s.Stdout.Close()
		// A process that left the group may hold stderr open: stop
		// reading after a short wait.
		select {
		case <-s.stderr:
		case <-time.After(100 * time.Millisecond):
			_ = s.errR.SetReadDeadline(time.Now())
			<-s.stderr
		}
		_ = s.errR.Close()
	})
}

// signal sends sig to the server's group (for tests).
func (s *Server) signal(sig syscall.Signal) error { return syscall.Kill(-s.PID, sig) }
