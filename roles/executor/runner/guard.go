package runner

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// groupGuard is a small shell process that outlives the executor by a moment:
// the runner tells it, through a pipe, each step's process group when the
// step starts and again when the group is gone; when the pipe closes —
// the executor exited, even by kill -9, and the kernel closed its end —
// it kills every group still listed. So no step process outlives the
// executor, background children included, without a wrapper process per
// step (each step is one fork and exec, as in a shell). The step's own
// shell also has the parent-death signal, which covers the instant
// between its start and its listing.
//
// A group is listed at once; that it is gone is told with the next
// listing, in the same write, or within unlistDelay: one write — one
// wake-up of the guard — per step rather than two. A group gone but still
// listed is harmless: its number cannot be another group's until the
// kernel's process ids wrap around, which takes far longer.
//
// One guard serves the whole process. It ignores the signals a terminal
// or a service manager sends, so that it is still there to read the end
// of its pipe. If it dies, the next message starts another and lists the
// live groups with it.
type groupGuard struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	w    *os.File // the guard's stdin
	live map[int]bool
	// gone are the groups unlisted here and not yet told to the guard;
	// unlist tells it, armed while gone is not empty.
	gone    []int
	unlist  *time.Timer
	pending bool // unlist is armed
	buf     []byte
}

// unlistDelay bounds how long a gone group stays listed with the guard
// when no other step starts.
const unlistDelay = 100 * time.Millisecond

// guardian is the process's guard.
var guardian groupGuard

// guardScript keeps the listed groups in shell variables g<pgid> and, at
// end of input, kills each group left (builtins only: it runs with an
// empty environment).
const guardScript = `trap '' HUP INT TERM QUIT PIPE
while read -r op pg; do
	case $pg in ''|*[!0-9]*) continue ;; esac
	case $op in
	+) eval "g$pg=1" ;;
	-) unset "g$pg" ;;
	esac
done
set | while IFS='=' read -r k v; do
	case $k in g[0-9]*) kill -KILL "-${k#g}" 2>/dev/null ;; esac
done`

// add lists group pgid, telling the guard in the same write of the groups
// gone since the last write.
func (g *groupGuard) add(pgid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = map[int]bool{}
	}
	g.live[pgid] = true
	b := g.goneLines(g.buf[:0])
	b = append(strconv.AppendInt(append(b, '+', ' '), int64(pgid), 10), '\n')
	g.buf = b
	if err := g.sendLocked(b); err != nil {
		delete(g.live, pgid)
		return err
	}
	g.gone = g.gone[:0]
	if g.pending {
		g.pending = !g.unlist.Stop()
	}
	return nil
}

// remove unlists group pgid once it is gone: the guard is told with the
// next add, or within unlistDelay.
func (g *groupGuard) remove(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.live, pgid)
	g.gone = append(g.gone, pgid)
	if g.pending {
		return
	}
	g.pending = true
	if g.unlist == nil {
		g.unlist = time.AfterFunc(unlistDelay, g.flushGone)
	} else {
		g.unlist.Reset(unlistDelay)
	}
}

// flushGone tells the guard of the groups gone (unlist's function).
func (g *groupGuard) flushGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = false
	if len(g.gone) == 0 {
		return
	}
	g.buf = g.goneLines(g.buf[:0])
	_ = g.sendLocked(g.buf)
	g.gone = g.gone[:0]
}

// goneLines appends the guard's lines unlisting the groups gone to b.
func (g *groupGuard) goneLines(b []byte) []byte {
	for _, pg := range g.gone {
		b = append(strconv.AppendInt(append(b, '-', ' '), int64(pg), 10), '\n')
	}
	return b
}

// sendLocked writes line to the guard, starting one (and listing the live
// groups with it) if there is none or the last one died.
func (g *groupGuard) sendLocked(line []byte) error {
	if g.w != nil {
		if _, err := g.w.Write(line); err == nil {
			return nil
		}
		// The guard died (EPIPE): reap it and start another.
		g.w.Close()
		_ = g.cmd.Wait()
		g.cmd, g.w = nil, nil
	}
	if err := g.startLocked(); err != nil {
		return err
	}
	return nil
}

// startLocked starts a guard in its own process group and lists every
// live group with it.
func (g *groupGuard) startLocked() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("runner: guard pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        shellPath,
		Args:        []string{shellPath, "-c", guardScript, "agentic-guard"},
		Env:         []string{},
		Dir:         "/",
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("runner: start the guard: %w", err)
	}
	g.cmd, g.w = cmd, w
	for pg := range g.live {
		if _, err := fmt.Fprintf(w, "+ %d\n", pg); err != nil {
			return fmt.Errorf("runner: guard: %w", err)
		}
	}
	return nil
}
