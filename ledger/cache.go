package ledger

import "math"

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
