package runner

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// shellPath is the shell that runs the wrapper and the step.
const shellPath = "/bin/sh"

// deathSignal is what the kernel sends the wrapper when the executor thread
// that forked it dies (Pdeathsig). It must differ from SIGTERM, which the
// runner uses to stop a group gracefully and the wrapper outlives.
const deathSignal = syscall.SIGHUP

// wrapperScript runs the step ("$1") as a background child and waits for
// it, so that the wrapper stays the leader of the step's process group:
//
//   - On SIGHUP (the parent-death signal: the executor died, even by
//     kill -9) or SIGINT it kills its whole group with SIGKILL, itself
//     included: no step process outlives its executor.
//   - SIGTERM, sent by the runner to the whole group on timeout or cancel,
//     interrupts its wait but not the wrapper: it goes back to waiting and
//     exits with the step's status once the step is gone.
//   - Otherwise it exits with the step's exit status (wait "$p" returns it;
//     a wait interrupted by a trapped signal returns >128 while the child is
//     still there, which is what the loop tells apart).
//
// As for every asynchronous command of a non-interactive shell, the step
// starts with SIGINT and SIGQUIT ignored and stdin on /dev/null.
const wrapperScript = `trap 'kill -KILL 0' HUP INT
trap ':' TERM
` + shellPath + ` -c "$1" &
p=$!
while :; do
	wait "$p"; s=$?
	if [ "$s" -le 128 ] || ! kill -0 "$p" 2>/dev/null; then exit "$s"; fi
done`

// wrapperName is $0 of the wrapper, visible in ps.
const wrapperName = "agentic-step"

// command builds the exec.Cmd of a step: the wrapper in a new process group
// with the parent-death signal set.
func command(script, cwd string, env []string, stdout, stderr *os.File) *exec.Cmd {
	cmd := &exec.Cmd{
		Path:   shellPath,
		Args:   []string{shellPath, "-c", wrapperScript, wrapperName, script},
		Env:    env,
		Dir:    cwd,
		Stdout: stdout,
		Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: deathSignal,
		},
	}
	return cmd
}

// child is a started wrapper process.
type child struct {
	pid  int
	done chan struct{} // closed once the wrapper exited and was reaped
	// state and err are set before done is closed.
	state *os.ProcessState
	err   error
}

// start forks cmd from a goroutine locked to its OS thread and keeps it
// locked until the child has been reaped.
//
// Why: Linux delivers the parent-death signal when the *thread* that forked
// the child exits, not the process. The Go runtime ends a thread when a
// goroutine locked to it exits without unlocking; any goroutine might do
// that on the thread we forked from if that thread went back to the pool.
// Holding the thread for the child's whole life means the signal fires only
// when the process dies. The cost is one OS thread per running step, parked
// waiting for the child.
func start(cmd *exec.Cmd) (*child, error) {
	c := &child{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		c.err = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// waitErr is the error of waiting for the wrapper when it did not yield an
// exit status (an exit status other than 0 is not an error here).
func (c *child) waitErr() error {
	if c.state == nil {
		return c.err
	}
	return nil
}

// exitCode is the wrapper's exit status, -1 if a signal killed it.
func (c *child) exitCode() int {
	if c.state == nil {
		return -1
	}
	return c.state.ExitCode()
}

// signalled returns the signal that killed the wrapper, if one did.
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
