package outbox

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
