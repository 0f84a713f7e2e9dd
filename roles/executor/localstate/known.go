package localstate

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Bounds of the store's memory of its records (known).
const (
	// knownRecords is how many attempt records the store keeps in memory.
	knownRecords = 4096
	// knownKeys bounds the key hashes kept for runs known to be fresh.
	knownKeys = 1 << 16
)

// known is the store's memory of its attempt records, so that most
// lookups — the executor's check of each assignment, and the reads the
// commit loop makes before it writes — need no read of Pebble. Every
// attempt record is written by the store's commit loop (the store's
// directory is locked by Pebble: no other process writes it), which tells
// known of each record once it is committed. Two facts are kept, each
// exact or absent, never wrong:
//
//   - recs: the record last committed under a key (State "" once
//     deleted by Forget), for the last knownRecords records written.
//   - fresh: for a run whose records Pebble was read to hold none
//     (probe), the hashes of every key of that run committed since. A key
//     of a fresh run whose hash is not there has no record: that is how a
//     lookup proves an attempt new without reading Pebble.
//
// Whatever known cannot answer is read from Pebble as before. Forgetting is
// always safe: a bound reached, a prune, a failed sync clear it.
type known struct {
	mu   sync.Mutex
	seed maphash.Seed
	recs map[string]Attempt
	// fresh are the fresh runs, with the hashes of their keys committed
	// since the probe; keys counts them all.
	fresh map[string]map[uint64]struct{}
	keys  int
	// probed are the runs a probe found records of: not probed again.
	probed map[string]struct{}
	// gen counts the changes of what known holds (commits, clears): a
	// probe whose read raced with one is not trusted.
	gen uint64
	// maxRecs and maxKeys are knownRecords and knownKeys (tests lower them).
	maxRecs, maxKeys int
}

func (k *known) init() {
	k.seed = maphash.MakeSeed()
	k.recs = map[string]Attempt{}
	k.fresh = map[string]map[uint64]struct{}{}
	k.probed = map[string]struct{}{}
	k.maxRecs, k.maxKeys = knownRecords, knownKeys
}

func (k *known) hash(key []byte) uint64 { return maphash.Bytes(k.seed, key) }

// lookup answers from memory: the record of key (ok), or that there is
// none (absent); neither when it does not know.
func (k *known) lookup(run string, key []byte) (a Attempt, ok, absent bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, found := k.recs[string(key)]; found {
		if a.State == "" {
			return Attempt{}, false, true // forgotten
		}
		return a, true, false
	}
	if f, fresh := k.fresh[run]; fresh {
		if _, maybe := f[k.hash(key)]; !maybe {
			return Attempt{}, false, true
		}
	}
	return Attempt{}, false, false
}

// probeWanted returns the generation to probe run at, or false when run
// is fresh already or was found to hold records.
func (k *known) probeWanted(run string) (uint64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, fresh := k.fresh[run]
	_, probed := k.probed[run]
	return k.gen, !fresh && !probed
}

// probed records what a probe of run, begun at generation gen, found:
// none means Pebble held no record of run. It is trusted only if nothing
// was committed or forgotten since gen: a record committed meanwhile
// might have been missed by the read and not counted by committed.
func (k *known) probeDone(run string, gen uint64, none bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != gen {
		return
	}
	if !none {
		if len(k.probed) >= k.maxRecs {
			clear(k.probed)
		}
		k.probed[run] = struct{}{}
		return
	}
	k.fresh[run] = map[uint64]struct{}{}
}

// committed records recs, just committed to Pebble.
func (k *known) committed(recs []Attempt) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	for _, a := range recs {
		key := attemptKey(recordPrefix, a.Run, a.Step, a.Attempt)
		if _, ok := k.recs[string(key)]; !ok && len(k.recs) >= k.maxRecs {
			clear(k.recs)
		}
		k.recs[string(key)] = a
		if f, fresh := k.fresh[a.Run]; fresh {
			if k.keys >= k.maxKeys {
				// Forget the run rather than a key of it: its keys are
				// read from Pebble from now on.
				k.keys -= len(f)
				delete(k.fresh, a.Run)
				continue
			}
			h := k.hash(key)
			if _, dup := f[h]; !dup {
				f[h] = struct{}{}
				k.keys++
			}
		}
	}
}

// forget drops everything known: Pebble may hold other records than
// those known (a prune, a failed sync).
func (k *known) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	clear(k.recs)
	clear(k.fresh)
	clear(k.probed)
	k.keys = 0
}

// lookupKnown is lookupIn answered from known when it can be, and from db
// otherwise; a lookup that finds no record of a run not yet probed probes
// it, so that the run's next new attempts are proved new from memory.
func (s *Store) lookupKnown(db *pebble.DB, run, step string, attempt int) (Attempt, bool, error) {
	key := attemptKey(recordPrefix, run, step, attempt)
	if a, ok, absent := s.known.lookup(run, key); ok || absent {
		return a, ok, nil
	}
	gen, probe := s.known.probeWanted(run)
	a, ok, err := lookupIn(db, run, step, attempt)
	if err != nil || ok || !probe {
		return a, ok, err
	}
	none, err := noRecordOf(db, run)
	if err != nil {
		return Attempt{}, false, nil // the lookup's answer stands; only the probe failed
	}
	s.known.probeDone(run, gen, none)
	return Attempt{}, false, nil
}

// noRecordOf reports whether db holds no attempt record of run.
func noRecordOf(db *pebble.DB, run string) (bool, error) {
	prefix := append(append([]byte(recordPrefix), run...), 0)
	upper := bytes.Clone(prefix)
	upper[len(upper)-1]++
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return false, fmt.Errorf("localstate: probe run %s: %w", run, err)
	}
	none := !it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("localstate: probe run %s: %w", run, err)
	}
	return none, nil
}
