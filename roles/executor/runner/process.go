package runner

import (
	"os"
	"os/exec"
	"syscall"
)

// shellPath is the shell that runs the step.
const shellPath = "/bin/sh"

// deathSignal is what the kernel sends the step's shell when the executor
// thread that forked it dies (Pdeathsig). The rest of its process group
// is killed by the guard (see guard).
const deathSignal = syscall.SIGKILL

// command builds the exec.Cmd of a step: /bin/sh -c script, leader of a
// new process group, with the parent-death signal set, as the user cred
// names (nil: the executor's). The step's shell is the executor's own
// child — one fork and exec, as a shell running it would do — and its $$
// is the process group. (Go sets the parent-death signal after switching
// users, which would otherwise clear it.)
func command(script, cwd string, env []string, cred *syscall.Credential, stdout, stderr *os.File) *exec.Cmd {
	return &exec.Cmd{
		Path:   shellPath,
		Args:   []string{shellPath, "-c", script},
		Env:    env,
		Dir:    cwd,
		Stdout: stdout,
		Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  deathSignal,
			Credential: cred,
		},
	}
}

// child is a started step process, the leader of its group.
type child struct {
	cmd *exec.Cmd
	pid int
	// done is closed once the process exited and was reaped; state and
	// err are set before.
	done  chan struct{}
	state *os.ProcessState
	err   error
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
func start(cmd *exec.Cmd) (*child, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	if err := guardian.add(c.pid); err != nil {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		c.wait()
		return nil, err
	}
	return c, nil
}

// wait waits for the child to exit, reaps it and closes done.
func (c *child) wait() {
	c.err = c.cmd.Wait()
	c.state = c.cmd.ProcessState
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
