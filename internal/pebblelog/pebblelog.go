// Package pebblelog connects Pebble to agentic's logging and failure rules,
// for every Pebble store a node opens (ledger, outbox, executor state).
//
// Pebble prints to stderr unless given a Logger, and reports a failed WAL
// sync by calling Logger.Fatalf, which must not return. Logger routes
// Pebble's lines to slog and panics with a *Fatal; SyncCommit turns such a
// panic, raised by its own commit, into an error, so that the caller can
// stop the node cleanly instead of acknowledging anything (DESIGN.md: a
// failed fsync stops the node). A Fatalf raised anywhere else (a background
// compaction) ends the process, as Pebble intends.
package pebblelog

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Logger adapts slog to pebble.Logger.
type Logger struct{ L *slog.Logger }

var _ pebble.Logger = Logger{}

// New returns a Logger writing to l (slog.Default() if nil), tagged lib=pebble.
func New(l *slog.Logger) Logger {
	if l == nil {
		l = slog.Default()
	}
	return Logger{L: l.With("lib", "pebble")}
}

// Infof logs Pebble's routine messages at Debug level.
func (l Logger) Infof(format string, args ...any) {
	l.L.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}

// Errorf logs Pebble's errors at Error level.
func (l Logger) Errorf(format string, args ...any) {
	l.L.Error("pebble", "msg", fmt.Sprintf(format, args...))
}

// Fatalf logs and panics with a *Fatal.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.L.Error("pebble fatal", "msg", msg)
	panic(&Fatal{Msg: msg, args: args})
}

// Fatal is the panic value of Logger.Fatalf and the error SyncCommit
// returns for it.
type Fatal struct {
	Msg  string
	args []any
}

func (f *Fatal) Error() string { return "pebble fatal: " + f.Msg }

// Unwrap exposes the errors Pebble passed, so the disk error stays testable.
func (f *Fatal) Unwrap() []error {
	var errs []error
	for _, a := range f.args {
		if err, ok := a.(error); ok {
			errs = append(errs, err)
		}
	}
	return errs
}

// SyncCommit commits b with pebble.Sync and returns Pebble's fatal report of
// a failed sync as an error (a *Fatal) instead of a panic. Other panics
// pass through.
func SyncCommit(b *pebble.Batch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*Fatal)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return b.Commit(pebble.Sync)
}

// IsFatal reports whether err is Pebble's fatal report.
func IsFatal(err error) bool {
	var f *Fatal
	return errors.As(err, &f)
}

// FailingSyncFS wraps base so that, while armed is true, every fsync of a
// write-ahead log file fails with err: a disk that stops persisting. It is
// for tests of the rule that a failed fsync stops the node.
func FailingSyncFS(base vfs.FS, armed *atomic.Bool, err error) vfs.FS {
	return errorfs.Wrap(base, errorfs.InjectorFunc(func(op errorfs.Op) error {
		isSync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if armed.Load() && isSync && strings.HasSuffix(op.Path, ".log") {
			return err
		}
		return nil
	}))
}
