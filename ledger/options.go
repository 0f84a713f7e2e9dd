package ledger

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure a Store.
type Options struct {
	// Logger receives the ledger's logs and Pebble's (Pebble's info lines at
	// Debug level). nil means slog.Default().
	Logger *slog.Logger

	// fs replaces the file system, for tests that inject disk failures.
	fs vfs.FS
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// cacheBytes is the block cache size. Append looks up every event id in the
// seen-set; the filter blocks that answer those lookups must stay cached,
// and raw messages flowing through the cache would evict them from Pebble's
// 8 MiB default (measured: ~3x fewer events/s at 512 events per commit).
const cacheBytes = 64 << 20

// pebbleOptions are the Pebble options of a ledger. Overridden from Pebble's
// defaults: FormatMajorVersion (newest, for new stores; Pebble ratchets
// older stores forward), Logger (slog), Cache (cacheBytes), and a bloom
// filter on every level (L0 included), because nearly all seen-set lookups
// miss and without a filter each miss reads and decompresses a data block.
// The caller owns the returned cache reference: Unref it after pebble.Open.
func pebbleOptions(log *slog.Logger, fs vfs.FS) *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{log: log.With("lib", "pebble")},
		Cache:              pebble.NewCache(cacheBytes),
		FS:                 fs,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// pebbleLogger adapts slog to pebble.Logger so Pebble never prints to stderr.
type pebbleLogger struct{ log *slog.Logger }

var _ pebble.Logger = pebbleLogger{}

// Infof logs Pebble's routine messages at Debug level.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}

// Errorf logs Pebble's errors at Error level.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble", "msg", fmt.Sprintf(format, args...))
}

// Fatalf logs and panics with a pebbleFatal: Pebble calls it when it cannot
// go on safely, and it must not return. Append recovers the panic raised by
// its own commit (a failed WAL sync) into ErrSync; raised anywhere else (a
// background compaction) it ends the process, as Pebble intends.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble fatal", "msg", msg)
	panic(pebbleFatal{msg: msg, args: args})
}

// pebbleFatal is the panic value of pebbleLogger.Fatalf.
type pebbleFatal struct {
	msg  string
	args []any
}

func (f pebbleFatal) Error() string { return "ledger: pebble fatal: " + f.msg }

// Unwrap exposes the errors Pebble passed, so the disk error stays testable.
func (f pebbleFatal) Unwrap() []error {
	var errs []error
	for _, a := range f.args {
		if err, ok := a.(error); ok {
			errs = append(errs, err)
		}
	}
	return errs
}
