package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// keyVerified is the ledger's verified checkpoint: the position and chain
// hash of the last record whose chain was checked in full (CheckChain or
// an OK Verify) or that this store appended itself after such a check
// (moved at Close). It only moves forward. A crash leaves it where it was: the next start checks
// the records appended since in full.
const keyVerified = "meta/verified"

// Checkpoint is a position whose chain was verified, with its chain hash.
type Checkpoint struct {
	Seq  uint64
	Hash [32]byte
}

func (c Checkpoint) encode() []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 40), c.Seq), c.Hash[:]...)
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) != 40 {
		return Checkpoint{}, fmt.Errorf("%w: %s is %d bytes, want 40", ErrCorrupt, keyVerified, len(b))
	}
	var c Checkpoint
	c.Seq = binary.BigEndian.Uint64(b)
	copy(c.Hash[:], b[8:])
	return c, nil
}

// ChainReport is the outcome of CheckChain and Relink.
type ChainReport struct {
	// OK is true when every check passed.
	OK bool
	// From is the verified checkpoint the check started from (0: none).
	From uint64
	// Linked is how many records Relink re-hashed (1..the checkpoint);
	// Checked how many records after the checkpoint CheckChain checked in
	// full.
	Linked, Checked uint64
	// FirstBadSeq is the first position that failed (0 when OK).
	FirstBadSeq uint64
	// Err says what failed there ("" when OK).
	Err string
}

// checkEvery is how many records a check walks between looks at its
// context.
const checkEvery = 4096

// CheckChain is the check a ledger node runs at start, before it serves or
// folds anything: the record at the verified checkpoint must still hash to
// the checkpoint's hash (so a chain recomputed over a rewrite below it is
// found), and every record after it is checked as Verify checks it without
// a verifier (positions, hashes, decoding, stream coverage, the head).
// When all is well the checkpoint moves to the head. Relink covers the
// records below the checkpoint; signatures are left to Verify (`ledger
// verify`), the deep check. A failed check makes every later Append fail
// (ErrCorrupt). Findings go in the report; the error is for failures to
// read (wrapping ErrCorrupt when Pebble found its files damaged) and for
// ctx ending.
func (s *Store) CheckChain(ctx context.Context) (ChainReport, error) {
	return s.runCheck(ctx, "check chain", s.checkChain)
}

// Relink re-hashes every record up to the verified checkpoint against its
// stored chain hash and the checkpoint's hash: a record rewritten below
// the checkpoint, where CheckChain does not look, is found. It reads every
// record once (about 2.4 s for 1M records, BenchmarkCheckChain): a node
// runs it in the background after start. Findings and errors as CheckChain.
func (s *Store) Relink(ctx context.Context) (ChainReport, error) {
	return s.runCheck(ctx, "relink", func(ctx context.Context, snap *pebble.Snapshot) (ChainReport, Checkpoint, error) {
		cp, err := readCheckpoint(snap)
		if err != nil {
			return ChainReport{}, cp, err
		}
		rep := ChainReport{From: cp.Seq}
		linked, _, problem, err := relink(ctx, snap, cp)
		rep.Linked = linked
		switch {
		case err != nil:
			return rep, cp, err
		case problem != "":
			rep.FirstBadSeq, rep.Err = linked+1, problem
			return rep, cp, nil
		}
		rep.OK = true
		return rep, cp, nil
	})
}

func (s *Store) runCheck(ctx context.Context, what string, check func(context.Context, *pebble.Snapshot) (ChainReport, Checkpoint, error)) (ChainReport, error) {
	if err := s.acquire(); err != nil {
		return ChainReport{}, err
	}
	defer s.release()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	rep, cp, err := check(ctx, snap)
	if err != nil {
		return ChainReport{}, s.wrapRead(fmt.Errorf("ledger: %s: %w", what, err))
	}
	if !rep.OK {
		s.chainBad.Store(true)
		bad := fmt.Errorf("%w: %s", ErrCorrupt, rep.Err)
		s.broken.CompareAndSwap(nil, &bad)
		s.log.Error("ledger chain check failed", "check", what, "seq", rep.FirstBadSeq, "reason", rep.Err)
		return rep, nil
	}
	if err := s.advanceCheckpoint(cp); err != nil {
		return ChainReport{}, err
	}
	s.chainOK.Store(true)
	return rep, nil
}

func (s *Store) checkChain(ctx context.Context, snap *pebble.Snapshot) (ChainReport, Checkpoint, error) {
	var rep ChainReport
	cp, err := readCheckpoint(snap)
	if err != nil {
		return rep, cp, err
	}
	h, err := (&checker{snap: snap}).head()
	if err != nil {
		return rep, cp, err
	}
	rep.From = cp.Seq
	if cp.Seq > h.seq {
		rep.FirstBadSeq, rep.Err = h.seq+1, fmt.Sprintf("the head is at %d but records were verified up to %d: records are missing", h.seq, cp.Seq)
		return rep, cp, nil
	}
	stream, problem, err := anchor(snap, cp)
	switch {
	case err != nil:
		return rep, cp, err
	case problem != "":
		rep.FirstBadSeq, rep.Err = cp.Seq, problem
		return rep, cp, nil
	}
	c := &checker{ctx: ctx, snap: snap, next: cp.Seq + 1, prev: cp.Hash, stream: stream}
	vr, err := c.run()
	if err != nil {
		return rep, cp, err
	}
	rep.Checked = c.next - 1 - cp.Seq
	if !vr.OK {
		rep.FirstBadSeq, rep.Err = vr.FirstBadSeq, vr.Err
		return rep, cp, nil
	}
	rep.OK = true
	return rep, Checkpoint{Seq: h.seq, Hash: h.hash}, nil
}

// anchor checks that record cp.Seq, chained onto the stored hash before
// it, still gives the checkpoint's hash, and that its stored hash is that
// hash; it returns the record's stream seq, or a problem.
func anchor(snap *pebble.Snapshot, cp Checkpoint) (stream uint64, problem string, err error) {
	if cp.Seq == 0 {
		return 0, "", nil
	}
	var prev [32]byte
	if cp.Seq > 1 {
		b, err := getFrom(snap, hashKey(cp.Seq-1))
		if errors.Is(err, ErrNotFound) || (err == nil && len(b) != 32) {
			return 0, fmt.Sprintf("hash of record %d is missing", cp.Seq-1), nil
		}
		if err != nil {
			return 0, "", err
		}
		copy(prev[:], b)
	}
	rec, err := getFrom(snap, eventKey(cp.Seq))
	if errors.Is(err, ErrNotFound) {
		return 0, fmt.Sprintf("record %d (the verified checkpoint) is missing", cp.Seq), nil
	}
	if err != nil {
		return 0, "", err
	}
	stored, err := getFrom(snap, hashKey(cp.Seq))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, "", err
	}
	if sum := chain(prev, rec); sum != cp.Hash || !bytes.Equal(stored, cp.Hash[:]) {
		return 0, fmt.Sprintf("record %d does not match the verified checkpoint: chain hash %x (stored %x), verified %x", cp.Seq, sum, stored, cp.Hash), nil
	}
	ev, err := decodeRecord(cp.Seq, rec)
	if err != nil {
		return 0, err.Error(), nil
	}
	return ev.StreamSeq, "", nil
}

// relink recomputes the chain of records 1..cp.Seq from their bytes and
// compares each with its stored hash and the last with the checkpoint. It
// returns how many records linked, the stream seq of record cp.Seq, and a
// problem.
func relink(ctx context.Context, snap *pebble.Snapshot, cp Checkpoint) (linked, stream uint64, problem string, err error) {
	if cp.Seq == 0 {
		return 0, 0, "", nil
	}
	recs, err := snap.NewIter(&pebble.IterOptions{LowerBound: eventKey(1), UpperBound: eventKey(cp.Seq + 1)})
	if err != nil {
		return 0, 0, "", err
	}
	defer recs.Close()
	hashes, err := snap.NewIter(&pebble.IterOptions{LowerBound: hashKey(1), UpperBound: hashKey(cp.Seq + 1)})
	if err != nil {
		return 0, 0, "", err
	}
	defer hashes.Close()
	var prev [32]byte
	ok, hok := recs.First(), hashes.First()
	for seq := uint64(1); seq <= cp.Seq; seq++ {
		if seq%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return linked, 0, "", err
			}
		}
		if !ok || !bytes.Equal(recs.Key(), eventKey(seq)) {
			return linked, 0, fmt.Sprintf("record %d is missing", seq), errors.Join(recs.Error(), hashes.Error())
		}
		if !hok || !bytes.Equal(hashes.Key(), hashKey(seq)) {
			return linked, 0, fmt.Sprintf("hash of record %d is missing", seq), errors.Join(recs.Error(), hashes.Error())
		}
		sum := chain(prev, recs.Value())
		if !bytes.Equal(hashes.Value(), sum[:]) {
			return linked, 0, fmt.Sprintf("record %d does not chain: stored hash %x, computed %x", seq, hashes.Value(), sum), nil
		}
		if seq == cp.Seq {
			if sum != cp.Hash {
				return linked, 0, fmt.Sprintf("record %d does not match the verified checkpoint: chain hash %x, verified %x", seq, sum, cp.Hash), nil
			}
			ev, err := decodeRecord(seq, recs.Value())
			if err != nil {
				return linked, 0, err.Error(), nil
			}
			stream = ev.StreamSeq
		}
		prev = sum
		linked++
		ok, hok = recs.Next(), hashes.Next()
	}
	if err := errors.Join(recs.Error(), hashes.Error()); err != nil {
		return linked, 0, "", err
	}
	return linked, stream, "", nil
}

func readCheckpoint(r reader) (Checkpoint, error) {
	b, err := getFrom(r, []byte(keyVerified))
	switch {
	case errors.Is(err, ErrNotFound):
		return Checkpoint{}, nil
	case err != nil:
		return Checkpoint{}, err
	}
	return decodeCheckpoint(b)
}

// VerifiedCheckpoint returns the ledger's verified checkpoint (zero when
// nothing was verified yet).
func (s *Store) VerifiedCheckpoint() (Checkpoint, error) {
	if err := s.acquire(); err != nil {
		return Checkpoint{}, err
	}
	defer s.release()
	cp, err := readCheckpoint(s.db)
	return cp, s.wrapRead(err)
}

// advanceCheckpoint moves the verified checkpoint to cp unless it is
// already there or beyond. It is written like every other write of the
// store (syncSet: a failed commit, a full disk included, is an error that
// marks the store failed, never a crash); it moves rarely (a check every
// few minutes, a clean stop), so the fsync costs nothing that matters.
func (s *Store) advanceCheckpoint(cp Checkpoint) error {
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	cur, err := readCheckpoint(s.db)
	if err != nil {
		return s.wrapRead(fmt.Errorf("ledger: read the verified checkpoint: %w", err))
	}
	if cp.Seq <= cur.Seq {
		return nil
	}
	if err := s.syncSet([]byte(keyVerified), cp.encode()); err != nil {
		return fmt.Errorf("ledger: write the verified checkpoint: %w", err)
	}
	return nil
}

// corruption records the first damage Pebble found in the store's files.
type corruption struct {
	err atomic.Pointer[error]
}

func (c *corruption) set(info pebble.DataCorruptionInfo) {
	err := fmt.Errorf("%w: file %s: %s", ErrCorrupt, info.Path, info.Details.Error())
	c.err.CompareAndSwap(nil, &err)
}

func (c *corruption) get() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Corruption returns the first damage Pebble found in the ledger's files
// (a checksum that does not match, a table it cannot read), wrapping
// ErrCorrupt, or nil. Once set, Append refuses: nothing is folded on top of
// a damaged ledger.
func (s *Store) Corruption() error { return s.corrupt.get() }

// wrapRead marks a read error caused by damaged files as ErrCorrupt.
func (s *Store) wrapRead(err error) error {
	return markCorrupt(err, s.corrupt.get())
}

func markCorrupt(err, found error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || !pebble.IsCorruptionError(err) {
		return err
	}
	if found != nil {
		return found
	}
	// Pebble's text carries a detail line after the first: keep the first.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return fmt.Errorf("%w: %s", ErrCorrupt, msg)
}

// Checkpoint writes a consistent copy of the ledger, as of the call, into
// dir, which must not exist: a Pebble checkpoint (hard-linked where the
// file system allows), which opens as a ledger with Open. A damaged ledger
// is refused.
func (s *Store) Checkpoint(dir string) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.corrupt.get(); err != nil {
		return fmt.Errorf("ledger: checkpoint of a damaged ledger: %w", err)
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return s.wrapRead(fmt.Errorf("ledger: checkpoint into %s: %w", dir, err))
	}
	return nil
}
