package ledger_test

import (
	"testing"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// TestDropCacheEmptiesBlockCache: blocks a scan of the history brought
// into the cache are gone after DropCache, reads still answer (filling it
// again), and a closed store ignores it.
func TestDropCacheEmptiesBlockCache(t *testing.T) {
	st := ledgertest.OpenDir(t, t.TempDir())
	kit := ledgertest.NewKit(t)
	for i := uint64(1); i <= 300; i++ {
		mustAppend(t, st, kit.Message(i, kit.Node, started("r", 3)...))
	}
	if err := ledger.CompactAll(st); err != nil { // records into sstables, read through the cache
		t.Fatal(err)
	}
	if rep := mustCheck(t, st); rep.Checked != 900 {
		t.Fatalf("CheckChain checked %d records, want 900", rep.Checked)
	}
	if st.CacheBytes() == 0 {
		t.Fatal("block cache empty after a scan of the sstables")
	}
	st.DropCache()
	if n := st.CacheBytes(); n != 0 {
		t.Errorf("block cache holds %d bytes after DropCache, want 0", n)
	}
	if recs := collect(t, st.Scan(1)); len(recs) != 900 {
		t.Errorf("Read after DropCache: %d records, want 900", len(recs))
	}
	if st.CacheBytes() == 0 {
		t.Error("block cache still empty after reading the sstables again")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st.DropCache() // a closed store: nothing to do, no panic
}
