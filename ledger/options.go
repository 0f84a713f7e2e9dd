package ledger

import (
	"github.com/agentic-dev/agentic/internal/pebblelog"
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

	// FS is the file system the store lives on; nil means the operating
	// system's. Benchmarks use vfs.NewMem() to measure the store's own CPU
	// without the disk's; tests inject disk failures through it.
	FS vfs.FS
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
const cacheBytes = 16 << 20

// pebbleOptions are the Pebble options of a ledger. Overridden from Pebble's
// defaults: FormatMajorVersion (pinned: pebblelog.FormatMajorVersion),
// Logger (slog), DataCorruption (recorded in corrupt, not fatal), Cache
// (cacheBytes), and a bloom filter on every level (L0 included), because
// nearly all seen-set lookups miss and without a filter each miss reads
// and decompresses a data block.
// The caller owns the returned cache reference: Unref it after pebble.Open.
func pebbleOptions(log *slog.Logger, fs vfs.FS, corrupt *corruption) *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion: pebblelog.FormatMajorVersion,
		Logger:             pebblelog.New(log),
		Cache:              pebble.NewCache(cacheBytes),
		FS:                 fs,
		// Pebble's default for damaged files is Logger.Fatalf, which ends
		// the process with a stack trace; the store records the damage
		// instead (Store.Corruption) and the read returns its error.
		EventListener: pebblelog.NonFatalCorruption(log, corrupt.set),
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}
