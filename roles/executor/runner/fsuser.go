package runner

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"github.com/agentic-dev/agentic/bus/event"
	"golang.org/x/sys/unix"
)

// AsUser runs fn with the file system identity of the user the step spec
// runs as — Spec.RunAs, else Options.RunAs, else the executor's own user,
// refused as Run refuses it (see ClassOf) — and returns that user's name.
// It is how the executor makes a file edit as the step user.
//
// When the user is the executor's own, fn runs on the calling goroutine.
// Otherwise fn runs on a goroutine locked to an OS thread whose file
// system user and group ids and supplementary groups are the user's
// (setgroups, setfsgid, setfsuid: per thread on Linux, and switching the
// file system user away from root drops the thread's capabilities that
// bypass file permissions, CAP_DAC_OVERRIDE, CAP_FOWNER and CAP_CHOWN
// among them). Every open, create, rename, chmod, chown and unlink fn makes
// is then checked as that user, and a file it creates is owned by that
// user and group. The thread is never handed back to the Go runtime: the
// goroutine exits still locked, which ends the thread, and a thread the
// runtime starts later is never cloned from it. fn must make its file
// system calls itself, on its own goroutine, and leave no file open.
func AsUser(spec Spec, opts Options, fn func() error) (string, error) {
	as, err := resolveAccount(spec, opts)
	if err != nil {
		return "", err
	}
	if as.cred == nil {
		return as.name, fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("as user %s: panic: %v", as.name, r)
			}
		}()
		if err := switchFS(as.cred); err != nil {
			errc <- fmt.Errorf("take the file system identity of user %s: %w", as.name, err)
			return
		}
		errc <- fn()
	}()
	return as.name, <-errc
}

// switchFS gives the calling thread c's supplementary groups and file
// system ids, and checks that it has them.
func switchFS(c *syscall.Credential) error {
	groups := make([]int, 0, len(c.Groups)+1)
	for _, g := range c.Groups {
		groups = append(groups, int(g))
	}
	if len(groups) == 0 {
		groups = append(groups, int(c.Gid))
	}
	// unix.Setgroups is the raw system call: this thread only (the
	// syscall package's would change every thread of the process).
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if _, err := unix.SetfsgidRetGid(int(c.Gid)); err != nil {
		return fmt.Errorf("setfsgid: %w", err)
	}
	if _, err := unix.SetfsuidRetUid(int(c.Uid)); err != nil {
		return fmt.Errorf("setfsuid: %w", err)
	}
	// An id of -1 is refused and changes nothing: the call then returns
	// the ids in force.
	if g, _ := unix.SetfsgidRetGid(-1); g != int(c.Gid) {
		return fmt.Errorf("setfsgid: the thread's file system group is %d, not %d", g, c.Gid)
	}
	if u, _ := unix.SetfsuidRetUid(-1); u != int(c.Uid) {
		return fmt.Errorf("setfsuid: the thread's file system user is %d, not %d", u, c.Uid)
	}
	return nil
}

// ClassOf is the failure class of an error AsUser returns: class policy
// for a step refused to run as root (Options.RefuseRoot), class logic for
// anything else (an unknown user, an executor that cannot switch users,
// an error of fn).
func ClassOf(err error) event.FailureClass {
	var re *runAsError
	if errors.As(err, &re) {
		return re.class
	}
	return event.ClassLogic
}
