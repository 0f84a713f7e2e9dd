package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// errTooLarge marks a plan input over plan.MaxFileBytes.
var errTooLarge = errors.New("plan file too large")

// readPlanFile reads the plan at path ("-": stdin) and returns its bytes
// and the name messages use for it. It reads at most plan.MaxFileBytes (a
// larger input, /dev/zero included, is refused after MaxFileBytes+1 bytes,
// never read to the end), and it gives up with ctx: a FIFO nobody writes
// to, or a terminal, does not hold agentctl past Ctrl-C or SIGTERM.
func (a *app) readPlanFile(ctx context.Context, path string) ([]byte, string, error) {
	if path == "-" {
		b, err := readStdin(ctx, a.env.Stdin)
		return b, planName(path), err
	}
	b, err := readFileCtx(ctx, path)
	return b, path, err
}

// planName is how messages name the plan at path.
func planName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// readLimited reads r up to plan.MaxFileBytes; more is errTooLarge.
func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, plan.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > plan.MaxFileBytes {
		return nil, errTooLarge
	}
	return b, nil
}

// readFileCtx reads a plan file. It opens it non-blocking, so that opening a
// FIFO without a writer returns at once, and waits for input through the
// runtime's poller, which a read deadline interrupts when ctx ends. Regular
// files are read as usual (O_NONBLOCK means nothing to them).
func readFileCtx(ctx context.Context, path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeNamedPipe != 0 {
		// read(2) on a FIFO that no writer has opened yet returns end of
		// file at once: wait until it is readable (data, or a writer that
		// came and went) before reading.
		if err := waitReadable(f); err != nil {
			return nil, ctxErr(ctx, err)
		}
	}
	b, err := readLimited(f)
	return b, ctxErr(ctx, err)
}

// waitReadable blocks until f is readable, through the runtime poller (so
// that f's read deadline ends the wait). Readiness is asked of the kernel
// each time (poll(2), no wait) rather than assumed: the poller forgets an
// edge that came before the wait began, so a writer that wrote and closed
// before it would never wake it.
func waitReadable(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		for errors.Is(err, unix.EINTR) {
			n, err = unix.Poll(fds, 0)
		}
		if err != nil {
			perr = err
			return true
		}
		return n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
	})
	if err != nil {
		return err
	}
	return perr
}

// ctxErr turns the deadline that cancellation set into ctx's error.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// readStdin reads a plan from stdin, giving up when ctx ends. Stdin is
// shared with the shell and cannot be switched to non-blocking mode, so
// the read runs in a goroutine; after a cancel agentctl exits, and the
// goroutine ends with stdin.
func readStdin(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readLimited(r)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
