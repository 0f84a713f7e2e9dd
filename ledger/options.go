package ledger

import (
	"bytes"
	"log/slog"

	"github.com/agentic-dev/agentic/internal/pebblelog"

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

// When L0 is compacted. A ledger appends at the end of each of its key
// spaces (records, hashes, messages, per-run and per-type indexes, the
// seen set, the time index, the run index), so every flush overlaps the
// last file of each space in the level below, and every compaction of L0
// into it rewrites those files whole. With Pebble's default (compact once
// L0 is two flushes deep) a node with a 250k-event history rewrote ~7
// bytes of old files per byte flushed, 5–25% of agentd's CPU under a
// stream of shell steps; compacting once L0 is 16 flushes deep rewrites
// them eight times less often (~2 bytes per byte flushed,
// TestCompactionsRewriteLittleOnAHistory). Reads look through up to that
// many more L0 files: a point lookup (the seen set) behind each file's
// bloom filter, a scan in its merge. Writes stop at 48 sublevels, 32
// above where compactions start (Pebble's defaults: 12, 10 above).
const (
	l0CompactionThreshold = 32 // Pebble compacts at half of it: 16 sublevels
	l0StopWritesThreshold = 48
)

// pebbleOptions are the Pebble options of a ledger. Overridden from Pebble's
// defaults: FormatMajorVersion (pinned: pebblelog.FormatMajorVersion),
// Logger (slog), DataCorruption (recorded in corrupt, not fatal), Cache
// (cacheBytes), L0's compaction and stop thresholds (above), a bloom
// filter on every level (L0 included), because nearly all seen-set
// lookups miss and without a filter each miss reads and decompresses a
// data block, and tables that end where the records' and the messages'
// key spaces begin and end (keySpaceSpans).
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
	o.L0CompactionThreshold = l0CompactionThreshold
	o.L0StopWritesThreshold = l0StopWritesThreshold
	o.Experimental.SpanPolicyFunc = keySpaceSpans
	return o
}

// keySpaceSpans makes every table a flush or a compaction writes end
// where the records (e/) or the messages (m/) begin or end (keySpaceEnd):
// it changes no stored byte, only where tables are cut. A ledger's key
// spaces each grow at their end, so a compaction of L0 meets the last
// table of each space below it; with tables cut only by size, the last
// table of the records also held the start of the spaces after them
// (old, never written again) and every compaction rewrote it whole. The
// records and the messages are most of the bytes a ledger writes; in
// tables of their own, a compaction rewrites only their tails: 1.8 bytes
// written by compactions per byte flushed instead of 2.55, with 41 tables
// instead of 31 (TestCompactionsRewriteLittleOnAHistory), and ~30% less
// CPU for Append with its compactions on a 240k-event history.
//
// Cutting at the end of every key space (the seen set and the hashes
// too) looked better still (0.35–0.46 bytes per byte flushed) but only
// because it left the flushes in L0, dozens of small tables per space
// that every seen-set lookup passes, and made six to nine times the
// tables. Pebble's smaller target file sizes (1 MB) lowered the rewrites
// only to 1.67 bytes per byte flushed and multiply every year-long
// ledger's tables by the ratio of the sizes, where four cuts add a few
// tables to each level (in L0, a few to each flush) however long the
// ledger.
func keySpaceSpans(start []byte) (pebble.SpanPolicy, []byte, error) {
	return pebble.SpanPolicy{}, keySpaceEnd(start), nil
}

// Bounds of the records' and the messages' key spaces.
var (
	eventsStart, eventsEnd     = []byte(prefixEvent), prefixEnd([]byte(prefixEvent))
	messagesStart, messagesEnd = []byte(prefixMessage), prefixEnd([]byte(prefixMessage))
)

// keySpaceEnd is the first key after k where a table must end: the start
// or the end of the records' space or the messages' space, whichever
// comes first after k; nil after the messages (no cut).
func keySpaceEnd(k []byte) []byte {
	for _, b := range [...][]byte{eventsStart, eventsEnd, messagesStart, messagesEnd} {
		if bytes.Compare(k, b) < 0 {
			return b
		}
	}
	return nil
}
