package pebblelog

import (
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FormatMajorVersion is the Pebble on-disk format every store of a node
// (ledger, outbox, executor state) is opened with. It is pinned, never
// pebble.FormatNewest: with Newest, a dependency bump would silently move
// the disk format forward on the next open and make a rollback to the
// previous agentic impossible. Moving it is a deliberate change, made in a
// release of its own and noted in the upgrade docs; Pebble ratchets stores
// written at an older format up to it when they are opened.
const FormatMajorVersion = pebble.FormatValueSeparation

// Sizes of the small stores (outbox, executor state): their working set is
// the few entries in flight, so Pebble's defaults (an 8 MiB cache and 4 MiB
// memtables each) would only add idle memory to every node.
const (
	smallCacheBytes    = 1 << 20
	smallMemTableBytes = 1 << 20
)

// SmallStoreOptions are the Pebble options of a node's small stores: the
// pinned format, logger l, file system fs (nil: the OS), a 1 MiB cache,
// 1 MiB memtables, and damaged files reported as errors
// (NonFatalCorruption). Call release after pebble.Open (the DB holds its own
// reference to the cache).
func SmallStoreOptions(l *slog.Logger, fs vfs.FS) (o *pebble.Options, release func()) {
	cache := pebble.NewCache(smallCacheBytes)
	o = &pebble.Options{
		FormatMajorVersion: FormatMajorVersion,
		Logger:             New(l),
		FS:                 fs,
		Cache:              cache,
		MemTableSize:       smallMemTableBytes,
		EventListener:      NonFatalCorruption(l, nil),
	}
	return o, cache.Unref
}

// NonFatalCorruption is an event listener that logs damaged files Pebble
// finds (a checksum that does not match) and hands them to found (if not
// nil) instead of Pebble's default, Logger.Fatalf, which would end the
// process with a stack trace. The read that found the damage returns an
// error Pebble marks as corruption (pebble.IsCorruptionError).
func NonFatalCorruption(l *slog.Logger, found func(pebble.DataCorruptionInfo)) *pebble.EventListener {
	if l == nil {
		l = slog.Default()
	}
	return &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		l.Error("store files damaged", "lib", "pebble", "file", info.Path, "err", info.Details.Error())
		if found != nil {
			found(info)
		}
	}}
}
