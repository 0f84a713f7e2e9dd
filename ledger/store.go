package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// formatVersion is the on-disk format this code writes. It only moves
// forward: Open upgrades older stores and refuses newer ones.
//
//	1  records, hashes, messages, run and type indexes, seen-set, snapshots
//	2  + x/ records by stream time
//	3  + c/ credentials seen signing
const formatVersion = 3

// Store is one node's ledger. Append is called from one goroutine (it is
// serialized anyway); Get, Scan*, Verify, snapshots and Export may run
// concurrently with it from others.
type Store struct {
	db *pebble.DB
	// cache is the DB's block cache (the DB holds the reference).
	cache *pebble.Cache
	dir   string
	log   *slog.Logger
	// corrupt holds the first damage Pebble reported in the files.
	corrupt *corruption
	// cpMu serializes moves of the verified checkpoint.
	cpMu sync.Mutex
	// chainOK is set when CheckChain or Verify passed, chainBad when
	// either found the chain wrong: Close moves the checkpoint only after
	// a pass and never after a failure.
	chainOK, chainBad atomic.Bool
	// broken is the finding of a failed CheckChain or Relink: Append
	// refuses from then on.
	broken atomic.Pointer[error]

	// appendMu serializes writers of the event path (Append, Import,
	// AttachIndexer) and guards indexers.
	appendMu sync.Mutex
	indexers []*attached
	// rejState is the rejection limiter's state as committed (guarded by
	// appendMu); rejects counts rejections since open.
	rejState rejectState
	rejects  rejectCounters
	// revoked are the revocations in force (revoke.go); creds caches
	// credentials read from messages and credsIndexed the keys the
	// credentials index holds (credentials.go). All guarded by appendMu.
	revoked revocations
	creds   map[string]*trust.Credential
	// revokedNow is revoked as committed, for readers without appendMu
	// (CheckCredential): revoked is replaced, never changed in place.
	revokedNow atomic.Pointer[revocations]
	// roots are the roots the ledger's trust records added or retired,
	// as committed, and genesis the genesis root (roots.go); both read
	// by the verifier's goroutines.
	roots        atomic.Pointer[rootSet]
	genesis      atomic.Pointer[genesisRoot]
	credsIndexed map[string]bool
	// credKeys caches the credentials index key of each credential
	// (credentials.go); guarded by appendMu.
	credKeys map[*trust.Credential]string
	// scratch are the appenders' buffers (guarded by appendMu).
	scratch scratch

	mu struct {
		sync.Mutex
		head   head
		failed error // set by a failed commit; Append refuses from then on
		closed bool
		refs   int // operations in flight; Close waits for zero
		idle   *sync.Cond
	}
}

// head is the ledger's tip, persisted at meta/head.
type head struct {
	seq     uint64
	hash    [32]byte
	applied uint64 // highest stream seq folded
}

func (h head) encode() []byte {
	b := make([]byte, 0, 48)
	b = binary.BigEndian.AppendUint64(b, h.seq)
	b = append(b, h.hash[:]...)
	return binary.BigEndian.AppendUint64(b, h.applied)
}

func decodeHead(b []byte) (head, error) {
	if len(b) != 48 {
		return head{}, fmt.Errorf("%w: meta/head is %d bytes, want 48", ErrCorrupt, len(b))
	}
	var h head
	h.seq = binary.BigEndian.Uint64(b)
	copy(h.hash[:], b[8:40])
	h.applied = binary.BigEndian.Uint64(b[40:])
	return h, nil
}

// Open opens or creates the ledger in dir.
func Open(dir string, opts Options) (*Store, error) {
	log := opts.logger().With("component", "ledger")
	corrupt := &corruption{}
	po := pebbleOptions(log, opts.FS, corrupt)
	db, err := pebble.Open(dir, po)
	po.Cache.Unref() // the DB holds its own reference
	if err != nil {
		return nil, markCorrupt(fmt.Errorf("ledger: open %s: %w", dir, err), corrupt.get())
	}
	s := &Store{db: db, cache: po.Cache, dir: dir, log: log, corrupt: corrupt,
		revoked: revocations{}, creds: map[string]*trust.Credential{}, credsIndexed: map[string]bool{},
		credKeys: map[*trust.Credential]string{}}
	s.mu.idle = sync.NewCond(&s.mu.Mutex)
	if err := s.load(); err != nil {
		return nil, errors.Join(s.wrapRead(err), db.Close())
	}
	return s, nil
}

// load checks the format version and reads the head.
func (s *Store) load() error {
	if err := s.checkFormat(); err != nil {
		return err
	}
	b, err := s.get([]byte(keyHead))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	h, err := decodeHead(b)
	if err != nil {
		return fmt.Errorf("ledger: open %s: %w", s.dir, err)
	}
	s.mu.head = h
	if s.rejState, err = loadRejectState(s.db); err != nil {
		return fmt.Errorf("ledger: open %s: %w", s.dir, err)
	}
	if err := s.loadRevocations(); err != nil {
		return fmt.Errorf("ledger: open %s: %w", s.dir, err)
	}
	if err := s.loadRoots(); err != nil {
		return fmt.Errorf("ledger: open %s: %w", s.dir, err)
	}
	return nil
}

func (s *Store) checkFormat() error {
	if _, err := s.get([]byte(keyImporting)); err == nil {
		return fmt.Errorf("%w: %s holds an unfinished import; remove it and import again", ErrFormat, s.dir)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	b, err := s.get([]byte(keyFormat))
	var version uint64
	switch {
	case errors.Is(err, ErrNotFound): // a new store
	case err != nil:
		return err
	case len(b) != 8:
		return fmt.Errorf("%w: meta/format is %d bytes in %s", ErrCorrupt, len(b), s.dir)
	default:
		version = binary.BigEndian.Uint64(b)
	}
	switch {
	case version > formatVersion:
		return fmt.Errorf("%w: %s has format %d, this build reads up to %d", ErrFormat, s.dir, version, formatVersion)
	case version == formatVersion:
		return nil
	}
	// A new store, or an older format: each upgrade runs in turn (an empty
	// store has nothing to upgrade), then the version moves forward, with
	// Sync, so an interrupted upgrade runs again.
	if version < 2 {
		if err := s.buildTimeIndex(); err != nil {
			return err
		}
	}
	if version < 3 {
		if err := s.buildCredentialIndex(); err != nil {
			return err
		}
	}
	if version != 0 {
		s.log.Info("ledger format upgraded", "dir", s.dir, "from", version, "to", formatVersion)
	}
	if err := s.syncSet([]byte(keyFormat), be64(formatVersion)); err != nil {
		return fmt.Errorf("ledger: write format version in %s: %w", s.dir, err)
	}
	return nil
}

// syncSet writes key = value in a commit with Sync. Pebble reports a
// failed commit (a WAL write or fsync that failed: a full disk) through
// Logger.Fatalf; pebblelog.SyncCommit makes it the error returned, wrapped
// in ErrSync, instead of a panic on the caller's goroutine. Pebble's commit
// pipeline stays failed after one, so the store then refuses every later
// write, as after a failed Append; reads go on.
func (s *Store) syncSet(key, value []byte) error {
	s.mu.Lock()
	failed := s.mu.failed
	s.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%w: an earlier commit failed: %w", ErrSync, failed)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, value, nil); err != nil {
		return err
	}
	if err := pebblelog.SyncCommit(b); err != nil {
		if pebblelog.IsFatal(err) {
			s.mu.Lock()
			if s.mu.failed == nil {
				s.mu.failed = err
			}
			s.mu.Unlock()
			s.log.Error("ledger commit failed", "key", string(key), "err", err)
		}
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	return nil
}

// get returns a copy of the value at key, or ErrNotFound.
func (s *Store) get(key []byte) ([]byte, error) {
	return getFrom(s.db, key)
}

// Close waits for operations in flight and closes the store. When the
// chain was checked (CheckChain or Verify passed) and nothing was found
// wrong since (no failed check or commit, no damaged file), it moves the
// verified checkpoint to the head: the records appended since the check
// this store chained itself. It is idempotent. Do not call it from
// inside a Scan loop of the same store.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	for s.mu.refs > 0 {
		s.mu.idle.Wait()
	}
	failed := s.mu.failed
	s.mu.Unlock()
	var snapErr error
	if failed == nil {
		s.appendMu.Lock()
		snapErr = s.snapshotIndexes()
		s.appendMu.Unlock()
		// What this store appended it chained itself: the next start
		// re-hashes it (CheckChain) but need not decode it again.
		if s.corrupt.get() == nil && s.chainOK.Load() && !s.chainBad.Load() {
			h := s.headNow()
			snapErr = errors.Join(snapErr, s.advanceCheckpoint(Checkpoint{Seq: h.seq, Hash: h.hash}))
		}
	}
	if err := errors.Join(snapErr, s.db.Close()); err != nil {
		return fmt.Errorf("ledger: close %s: %w", s.dir, err)
	}
	return nil
}

// acquire registers an operation in flight; release ends it.
func (s *Store) acquire() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrClosed
	}
	s.mu.refs++
	return nil
}

func (s *Store) release() {
	s.mu.Lock()
	s.mu.refs--
	if s.mu.refs == 0 {
		s.mu.idle.Broadcast()
	}
	s.mu.Unlock()
}

func (s *Store) headNow() head {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.head
}

// Head returns the last record's position and chain hash (0 and 32 zero
// bytes for an empty ledger) as committed. It reads them from Pebble, where
// the records of an Append, its index entries and its head become visible
// at once: whoever saw a record or an index entry (a run final in the run
// index) and asks for the head next gets one that includes it, even while
// the Append that committed it is still telling its indexers. After Close
// it returns the head in memory.
func (s *Store) Head() (seq uint64, hash [32]byte) {
	h, err := s.committedHead()
	if err != nil {
		h = s.headNow()
	}
	return h.seq, h.hash
}

// committedHead reads the head Pebble holds.
func (s *Store) committedHead() (head, error) {
	if err := s.acquire(); err != nil {
		return head{}, err
	}
	defer s.release()
	s.mu.Lock()
	failed := s.mu.failed
	s.mu.Unlock()
	if failed != nil {
		// What a failed commit left in Pebble may not be on disk: the
		// head in memory is what was.
		return head{}, failed
	}
	v, closer, err := s.db.Get([]byte(keyHead))
	if errors.Is(err, pebble.ErrNotFound) {
		return head{}, nil
	}
	if err != nil {
		return head{}, err
	}
	defer closer.Close()
	return decodeHead(v)
}

// AppliedStreamSeq returns the highest stream sequence folded so far; the
// follower resumes after it.
func (s *Store) AppliedStreamSeq() uint64 { return s.headNow().applied }
