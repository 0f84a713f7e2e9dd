package ledger

import (
	"fmt"
	"math"

	"github.com/agentic-dev/agentic/internal/pebblelog"
)

// DropCache empties the block cache: a node calls it once it is idle after
// catching up, when the cache holds blocks of history that the fold and
// the integrity scan read once and live work will not read again (up to
// cacheBytes of memory the idle node would keep). Reads fill the cache
// again as they need it. It does nothing on a closed store.
func (s *Store) DropCache() {
	if s.acquire() != nil {
		return
	}
	defer s.release()
	// Reserving the whole cache evicts every block that no open iterator
	// holds; releasing the reservation gives the room back, empty.
	n := s.cache.MaxSize()
	if n > math.MaxInt {
		n = math.MaxInt
	}
	s.cache.Reserve(int(n))()
}

// CacheBytes is the memory the block cache holds now.
func (s *Store) CacheBytes() int64 { return s.cache.Size() }

// releaseFlushes is how many memtable flushes ReleaseMemory makes: Pebble
// drops a flushed memtable (or large batch) from its queue by reslicing,
// so the queue's backing array keeps the flushed entries — their arenas
// and batch buffers — until an append outgrows the array. Each flush
// rotates the memtable (one append) and flushes it (one reslice), using
// the array's spare capacity up: the queue of a catch-up holds a few
// entries, well under this.
const releaseFlushes = 8

// ReleaseMemory lets Pebble drop what a burst of appends left in memory
// beyond the mutable memtable: flushed memtables and large batches its
// memtable queue still references (measured: the last catch-up commit's
// 4 MiB batch, held by an idle node until the next flushes). It flushes
// the memtable releaseFlushes times (each a WAL rotation; an empty
// memtable writes no table). Call it once idle after catching up; the
// memory returns with the next garbage collection. A store that failed a
// commit is left alone.
func (s *Store) ReleaseMemory() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.mu.Lock()
	failed := s.mu.failed
	s.mu.Unlock()
	if failed != nil {
		return nil
	}
	for range releaseFlushes {
		if err := s.flush(); err != nil {
			if pebblelog.IsFatal(err) {
				// As a failed commit: the store refuses writes from now on.
				s.mu.Lock()
				if s.mu.failed == nil {
					s.mu.failed = err
				}
				s.mu.Unlock()
			}
			return fmt.Errorf("ledger: flush %s: %w", s.dir, err)
		}
	}
	return nil
}

// flush flushes the memtable and returns Pebble's fatal report of a failed
// write (a WAL it cannot create) as an error instead of a panic.
func (s *Store) flush() (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*pebblelog.Fatal)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return s.db.Flush()
}

// Compacting reports whether Pebble is compacting or flushing: a node
// waits for the compactions a catch-up set off before it returns memory to
// the OS, since they allocate (and pool) buffers of their own.
func (s *Store) Compacting() bool {
	if s.acquire() != nil {
		return false
	}
	defer s.release()
	m := s.db.Metrics()
	return m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0
}
