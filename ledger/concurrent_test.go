package ledger_test

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// Readers running next to the appender always see a consistent prefix: a
// contiguous, correctly chained run of records from 1, and Verify passes.
func TestReadersDuringAppend(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	const n = 60
	msgs := make([]ledger.Message, n)
	for i := range msgs {
		msgs[i] = kit.Message(uint64(i+1), kit.Node, started("r", 4)...)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	report := func(s string) {
		select {
		case errs <- s:
		default:
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := range msgs {
			if _, err := st.Append(msgs[i : i+1]); err != nil {
				report(err.Error())
				return
			}
		}
	}()
	var scans atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() || scans.Load() < 4 {
				scans.Add(1)
				var prev [32]byte
				next := uint64(1)
				for rec, err := range st.Scan(1) {
					if err != nil {
						report(err.Error())
						return
					}
					b, _ := json.Marshal(rec.Event)
					prev = sha256.Sum256(append(prev[:], b...))
					if rec.Event.Seq != next || rec.Hash != prev {
						report("scan saw a torn ledger")
						return
					}
					next++
				}
				if next-1 > 0 {
					if _, err := st.Get(next - 1); err != nil {
						report(err.Error())
					}
				}
				if rep, err := st.Verify(kit.Verifier); err != nil || !rep.OK {
					report("verify during append failed: " + rep.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if seq, _ := st.Head(); seq != 4*n {
		t.Errorf("head %d, want %d", seq, 4*n)
	}
}
