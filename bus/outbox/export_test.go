package outbox

import "time"

// OnDisk counts the entries the outbox's store holds (pending, or
// acknowledged and not yet deleted).
func OnDisk(o *Outbox) (int, error) {
	o.dbMu.RLock()
	defer o.dbMu.RUnlock()
	it, err := o.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.SeekGE(prefix); ok && len(it.Key()) > len(prefix) && string(it.Key()[:len(prefix)]) == string(prefix); ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// SetGoneIdle sets how long an idle outbox waits before it writes the
// deletion of acknowledged entries; call it before Start.
func SetGoneIdle(o *Outbox, d time.Duration) { o.goneIdle = d }

// SetNow sets the outbox's clock (how long acknowledged entries have
// lingered); call it before Start.
func SetNow(o *Outbox, now func() time.Time) { o.now = now }
