package runner

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// shellPath is the shell that runs the step.
const shellPath = "/bin/sh"

// deathSignal is what the kernel sends the step's shell when the executor
// thread that forked it dies (Pdeathsig). The rest of its process group
// is killed by the guard (see guard).
const deathSignal = syscall.SIGKILL

// proc is what start forks: the program and its arguments, environment
// and working directory, stdout and stderr (stdin is /dev/null), and
// how the kernel sets it up.
type proc struct {
	path           string
	args           []string
	env            []string
	dir            string
	stdout, stderr *os.File
	// stdin is /dev/null when nil (a step); a plugin server's is a pipe.
	stdin *os.File
	sys   *syscall.SysProcAttr
}

// command builds the proc of a step: /bin/sh -c script, leader of a new
// process group, with the parent-death signal set, as the user cred names
// (nil: the executor's). The step's shell is the executor's own child —
// one fork and exec, as a shell running it would do — and its $$ is the
// process group. (Go sets the parent-death signal after switching users,
// which would otherwise clear it.)
func command(script, cwd string, env []string, cred *syscall.Credential, stdout, stderr *os.File) proc {
	return proc{
		path:   shellPath,
		args:   []string{shellPath, "-c", script},
		env:    env,
		dir:    cwd,
		stdout: stdout,
		stderr: stderr,
		sys: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  deathSignal,
			Credential: cred,
		},
	}
}

// child is a started step process, the leader of its group.
type child struct {
	p   *os.Process
	pid int
	// done is closed once the process exited and was reaped; state and
	// err are set before.
	done  chan struct{}
	state *os.ProcessState
	err   error
}

// devNull is the step's stdin, opened once and shared by every step (each
// child gets its own copy of the descriptor).
var devNull struct {
	sync.Mutex
	f *os.File
}

func stdin() (*os.File, error) {
	devNull.Lock()
	defer devNull.Unlock()
	if devNull.f == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		devNull.f = f
	}
	return devNull.f, nil
}

// forkExec starts p with os.StartProcess, as os/exec's Cmd.Start would —
// its environment without duplicates, the last of each name kept — without
// opening /dev/null for each step nor the rest of Cmd's bookkeeping.
func forkExec(p proc) (*os.Process, error) {
	in := p.stdin
	if in == nil {
		var err error
		if in, err = stdin(); err != nil {
			return nil, err
		}
	}
	env, err := dedupEnv(p.env)
	if err != nil {
		return nil, err
	}
	return os.StartProcess(p.path, p.args, &os.ProcAttr{
		Dir:   p.dir,
		Env:   env,
		Files: []*os.File{in, p.stdout, p.stderr},
		Sys:   p.sys,
	})
}

// dedupEnv returns env without duplicate names, each name keeping its
// last value, in the order of the entries kept; an entry holding a NUL
// byte is left out and reported. It is os/exec's dedupEnv (case-sensitive,
// NUL refused), the names seen kept in a slice rather than a map while the
// environment is short, as a step's is.
func dedupEnv(env []string) ([]string, error) {
	var err error
	out := make([]string, 0, len(env))
	var sawList []string
	var sawMap map[string]bool
	if len(env) <= 32 {
		sawList = make([]string, 0, len(env))
	} else {
		sawMap = make(map[string]bool, len(env))
	}
	for n := len(env); n > 0; n-- {
		kv := env[n-1]
		if strings.IndexByte(kv, 0) != -1 {
			err = errors.New("exec: environment variable contains NUL")
			continue
		}
		i := strings.Index(kv, "=")
		if i == 0 {
			i = strings.Index(kv[1:], "=") + 1
		}
		if i < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		k := kv[:i]
		if sawMap != nil {
			if sawMap[k] {
				continue
			}
			sawMap[k] = true
		} else {
			if slices.Contains(sawList, k) {
				continue
			}
			sawList = append(sawList, k)
		}
		out = append(out, kv)
	}
	slices.Reverse(out)
	return out, err
}

// start forks cmd and lists the child's process group with the guard. If
// the guard cannot be told, the group is killed and start fails: a step
// never runs unguarded.
//
// The calling goroutine must be locked to its OS thread (LockOSThread)
// and stay so until wait has returned. Why: Linux delivers the
// parent-death signal when the *thread* that forked the child exits, not
// the process. The Go runtime ends a thread when a goroutine locked to it
// exits without unlocking; any goroutine might do that on the thread we
// forked from if that thread went back to the pool. Holding the thread
// for the child's whole life means the signal fires only when the process
// dies. The cost is one OS thread per running step, blocked waiting for
// the child — the step's own goroutine, so no other goroutine is needed
// to start or wait for the child.
func start(cmd proc) (*child, error) {
	p, err := forkExec(cmd)
	if err != nil {
		return nil, err
	}
	c := &child{p: p, pid: p.Pid, done: make(chan struct{})}
	if err := guardian.add(c.pid); err != nil {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		c.wait()
		return nil, err
	}
	return c, nil
}

// wait waits for the child to exit, reaps it and closes done.
func (c *child) wait() {
	c.state, c.err = c.p.Wait()
	close(c.done)
}

// waitErr is the error of waiting for the process when it did not yield
// an exit status (an exit status other than 0 is not an error here).
func (c *child) waitErr() error {
	if c.state == nil {
		return c.err
	}
	return nil
}

// exitCode is the process's exit status; one a signal N killed exits
// 128+N, as a shell reports a child's death by a signal.
func (c *child) exitCode() int {
	if c.state == nil {
		return -1
	}
	if sig, ok := c.signalled(); ok {
		return 128 + int(sig)
	}
	return c.state.ExitCode()
}

// signalled returns the signal that killed the process, if one did.
func (c *child) signalled() (syscall.Signal, bool) {
	if c.state == nil {
		return 0, false
	}
	ws, ok := c.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}
