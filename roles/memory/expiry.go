package memory

import (
	"container/heap"
	"time"
)

// expiries is a min-heap of the facts' expiry times, for NextExpiry: an
// entry whose fact was removed or written again since is stale and is
// dropped when it reaches the top, so the heap holds at most one entry per
// write of a fact with a TTL not yet past the top.
type expiries []expiry

type expiry struct {
	at         int64 // Unix nanoseconds
	scope, key string
	seq        uint64
}

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(v any)        { *h = append(*h, v.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// trackExpiryLocked remembers f's expiry.
func (m *Memory) trackExpiryLocked(f Fact) {
	if f.ExpiresAt.IsZero() {
		return
	}
	heap.Push(&m.mu.expiries, expiry{at: f.ExpiresAt.UnixNano(), scope: f.Scope, key: f.Key, seq: f.Refs.Seq})
}

// NextExpiry returns the earliest expiry among the facts, and false when
// no fact expires: when the leader's next memory.pruned is due
// (roles/orchestrator). It costs O(log n) per stale entry it drops.
func (m *Memory) NextExpiry() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.mu.expiries) > 0 {
		top := m.mu.expiries[0]
		f, ok := m.mu.facts[top.scope][top.key]
		if ok && f.Refs.Seq == top.seq && !f.ExpiresAt.IsZero() && f.ExpiresAt.UnixNano() == top.at {
			return f.ExpiresAt, true
		}
		heap.Pop(&m.mu.expiries)
	}
	return time.Time{}, false
}
