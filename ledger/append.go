package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/canonjson"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// Message is one stream message to fold, already verified (or refused) by
// the caller.
type Message struct {
	// StreamSeq is the message's AGENTIC_EVENTS sequence (1-based).
	StreamSeq uint64
	// Subject it travelled on.
	Subject string
	// Time is the stream's timestamp of the message.
	Time time.Time
	// Raw is the signed JWS exactly as it travelled.
	Raw []byte
	// EnvelopeID is its jti ("" if it could not be read).
	EnvelopeID string
	// Events are the verified events it carries (ID, Type, Run, Node, Time,
	// Subject, Data set); Append sets Seq and StreamSeq.
	Events []event.Event
	// Reject is non-nil when verification failed: Append records one
	// event.Rejected record carrying it instead of Events.
	Reject *event.RejectedData
	// Signer is the credential that signed the message, as the verifier
	// authenticated it (envelope.Envelope.Signer): Append refuses the
	// message when it is revoked, and indexes it (Store.Credentials).
	// When nil, Append reads it from the header of Raw.
	Signer *trust.Credential
}

// Append folds msgs, in stream order, into the ledger in one Pebble batch
// committed with Sync, and returns the committed records in order (Seq and
// StreamSeq set) for the caller to hand to roles. For each message:
//
//   - StreamSeq <= AppliedStreamSeq(): skipped silently (redelivery).
//   - StreamSeq > AppliedStreamSeq()+1 (an empty ledger starts at 1): an
//     event.Gap record {From, To} comes first, and an Error is logged.
//   - Reject != nil: one event.Rejected record carrying it; no events: one
//     with code no_events.
//   - its signer's credential revoked (revoke.go) by a credential.revoked
//     of an earlier stream message: one event.Rejected record, code
//     credential_revoked.
//   - its signer's credential issued by a root a trust.root_retired of an
//     earlier stream message retired (roots.go): code root_retired; by a
//     root not trusted at its position: code unknown_signer.
//   - EnvelopeID seen before: one event.Rejected record, code replayed
//     ("replayed message id <jti>") or republished.
//   - such a refused message past the rejection rate (flood.go, judged by
//     stream time and sequence): no record of its own, and nothing of it
//     stored; it is counted in the open run, whose event.RejectedSummary
//     record comes before the next record or at the next window. A
//     recorded refusal keeps at most RejectRawMax bytes of its message.
//   - otherwise each event is appended, except one whose id was seen before
//     (duplicate_event, "duplicate event id <id>"), is empty (malformed),
//     whose payload is not JSON (bad_payload; so is a credential.revoked
//     that does not say what it revokes, and a trust.root_added or
//     trust.root_retired the roots refuse: roots.go) or that submits a goal for a
//     known run (duplicate_run), which becomes an event.Rejected record in
//     its place.
//
// The signer of a message with an accepted event, or refused as revoked,
// joins the credentials index (credentials.go) if it is new there.
//
// The limiter's state is committed with the head, so the records never
// depend on how messages were split into Appends or on restarts. The
// envelope id and event ids of a message with at least one accepted event
// join the persisted seen-set. The raw message (with its envelope id
// and stream time) is stored once per stream seq. A failed commit returns an
// error wrapping ErrSync and every later Append fails too: stop the node.
// Damaged files (Store.Corruption) or a failed chain check (CheckChain,
// Relink) give an error wrapping ErrCorrupt, and every later Append fails
// too.
func (s *Store) Append(msgs []Message) ([]event.Event, error) {
	out, err := s.append(msgs)
	return out, s.wrapRead(err)
}

func (s *Store) append(msgs []Message) ([]event.Event, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	for i := range msgs {
		if msgs[i].StreamSeq == 0 {
			return nil, fmt.Errorf("%w: message %d of %d has stream seq 0", ErrInvalid, i, len(msgs))
		}
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.mu.Lock()
	h, failed := s.mu.head, s.mu.failed
	s.mu.Unlock()
	if failed != nil {
		return nil, fmt.Errorf("%w: an earlier commit failed: %w", ErrSync, failed)
	}
	if err := s.corrupt.get(); err != nil {
		return nil, fmt.Errorf("ledger: nothing is appended to a damaged ledger: %w", err)
	}
	if bad := s.broken.Load(); bad != nil {
		return nil, fmt.Errorf("ledger: nothing is appended to a ledger whose chain check failed: %w", *bad)
	}

	events := 0
	for i := range msgs {
		events += max(1, len(msgs[i].Events))
	}
	seen, err := s.newSeenSet(events + len(msgs))
	if err != nil {
		return nil, err
	}
	defer seen.close()
	a := &appender{s: s, b: s.db.NewBatch(), head: h, seen: seen, rej: s.rejState.clone(),
		out: make([]event.Event, 0, events), times: make([]time.Time, 0, events), scratch: s.scratch}
	defer func() { s.scratch = a.scratch.trimmed() }()
	defer a.b.Close()
	for i := range msgs {
		if err := a.message(&msgs[i]); err != nil {
			return nil, err
		}
	}
	if len(a.out) == 0 && a.head.applied == h.applied {
		return nil, nil
	}
	if err := a.stageIndexes(); err != nil {
		// An indexer may have moved its memory past records that will
		// never commit: nothing more may be appended until a restart
		// restores it from the ledger.
		a.indexesCommitted(err)
		s.mu.Lock()
		s.mu.failed = err
		s.mu.Unlock()
		return nil, fmt.Errorf("ledger: records %d..%d not appended: %w", h.seq+1, a.head.seq, err)
	}
	if err = a.commit(); err != nil {
		a.indexesCommitted(err)
		s.mu.Lock()
		s.mu.failed = err
		s.mu.Unlock()
		s.log.Error("ledger commit failed", "from_seq", h.seq+1, "to_seq", a.head.seq, "err", err)
		return nil, fmt.Errorf("%w: records %d..%d (stream seq up to %d): %w", ErrSync, h.seq+1, a.head.seq, a.head.applied, err)
	}
	// The commit made the records, their index entries and the head
	// visible together (Head reads it from Pebble); memory follows, then
	// the indexers publish what they keep in memory.
	s.mu.Lock()
	s.mu.head = a.head
	s.mu.Unlock()
	a.indexesCommitted(nil)
	s.rejState = a.rej
	a.revocationsCommitted()
	a.rootsCommitted()
	a.credentialsCommitted()
	s.rejects.add(a.rejCodes, a.dropped, a.lastDropped)
	return a.out, nil
}

// appender accumulates one Append's batch.
type appender struct {
	s    *Store
	b    *pebble.Batch
	head head
	seen *seenSet // nil while importing
	out  []event.Event
	// raws holds the raw messages staged by this Append, by stream seq, so
	// that a verdict never depends on how messages were split into Appends.
	raws map[uint64][]byte
	// times[i] is the stream time of the message out[i] came in; msgTime
	// that of the message being staged.
	times   []time.Time
	msgTime time.Time
	// msgStored says whether the message being staged is stored (m/):
	// records of one that is not are indexed by time at their own time.
	msgStored bool
	// runs holds the run ids whose goal.submitted this Append staged.
	runs map[string]bool
	// snapped are the indexers whose snapshot this Append's batch holds.
	snapped []*attached
	// rej is the rejection limiter's state as this Append moves it
	// (flood.go); rejDirty says it changed. rejCodes, dropped and
	// lastDropped are this Append's share of the store's RejectStats.
	rej         rejectState
	rejDirty    bool
	rejCodes    map[event.RejectCode]uint64
	dropped     uint64
	lastDropped time.Time
	// revoked are the revocations this Append staged, each with what the
	// store had for its identity (revoke.go).
	revoked revocations
	// roots are the roots as this Append moved them, nil until it folds
	// a trust record (roots.go).
	roots rootSet
	// credsStaged are the credentials index keys this Append staged;
	// credStream the stream seq whose signer a rebuild indexed last
	// (credentials.go).
	credsStaged map[string]bool
	credStream  uint64
	scratch
}

// scratch are buffers for what an appender stages (the batch copies what
// it is given), kept by the store from one Append to the next.
type scratch struct {
	// rec holds the previous hash and the record being staged; key its
	// keys; seenKey the seen-set key being looked up or staged.
	rec, key, seenKey []byte
}

// maxScratch bounds a scratch buffer the store keeps between Appends: a
// rare large record is not held on to.
const maxScratch = 64 << 10

// trimmed returns sc without its buffers larger than maxScratch.
func (sc scratch) trimmed() scratch {
	for _, b := range []*[]byte{&sc.rec, &sc.key, &sc.seenKey} {
		if cap(*b) > maxScratch {
			*b = nil
		}
	}
	return sc
}

// commit writes the head and commits with Sync. Pebble reports a failed WAL
// sync through Logger.Fatalf; pebblelog.SyncCommit turns it into the
// commit's error.
func (a *appender) commit() error {
	if err := a.b.Set([]byte(keyHead), a.head.encode(), nil); err != nil {
		return err
	}
	if a.rejDirty {
		st, err := json.Marshal(a.rej)
		if err != nil {
			return fmt.Errorf("ledger: encode rejection limiter state: %w", err)
		}
		if err := a.b.Set([]byte(keyRejects), st, nil); err != nil {
			return err
		}
	}
	return pebblelog.SyncCommit(a.b)
}

// replayReason tells a replay (the same bytes again) from a republication
// (the same id, signed again by its verified signer). Only committed first
// copies are compared; anything else counts as a replay.
func (a *appender) replayReason(m *Message) (event.RejectCode, string, error) {
	replayed := reasonReplayed + m.EnvelopeID
	firstSeq, ok := a.seen.firstSeq(m.EnvelopeID)
	if !ok {
		v, err := a.s.get(seenKey(m.EnvelopeID))
		if errors.Is(err, ErrNotFound) || (err == nil && len(v) != 8) {
			return event.RejectReplayed, replayed, nil
		}
		if err != nil {
			return "", "", err
		}
		firstSeq = binary.BigEndian.Uint64(v)
	}
	orig, ok := a.raws[firstSeq]
	if !ok {
		b, err := a.s.get(messageKey(firstSeq))
		if errors.Is(err, ErrNotFound) {
			return event.RejectReplayed, replayed, nil
		}
		if err != nil {
			return "", "", err
		}
		sm, err := decodeMessage(firstSeq, b)
		if err != nil {
			return event.RejectReplayed, replayed, nil
		}
		orig = sm.Raw
	}
	if len(orig) == 0 || bytes.Equal(orig, m.Raw) {
		return event.RejectReplayed, replayed, nil
	}
	return event.RejectRepublished, fmt.Sprintf("%s%s (signed again by its signer; first at stream seq %d)", reasonRepublished, m.EnvelopeID, firstSeq), nil
}

func (a *appender) message(m *Message) error {
	if m.StreamSeq <= a.head.applied {
		return nil
	}
	a.msgTime, a.msgStored = m.Time.UTC(), len(m.Raw) > 0 || m.EnvelopeID != ""
	rej, err := a.refuseMessage(m)
	if err != nil {
		return err
	}
	gap := m.StreamSeq > a.head.applied+1
	if rej != nil {
		// The rate is judged by stream time and sequence alone: a run
		// of counted messages ends at a new window or a hole.
		if a.rej.Run != nil && (gap || windowOf(m.Time) > a.rej.Window) {
			if err := a.closeRun(); err != nil {
				return err
			}
		}
		a.rej.roll(m.Time)
		key, full := a.rej.admit(rej.Signer)
		a.rejDirty = true
		a.countReject(rej.Code)
		// A message after a hole is recorded (after its gap record), so
		// that a run is always contiguous.
		if !full && !gap {
			a.rej.count(m, key, rej.Code)
			a.head.applied = m.StreamSeq
			a.dropped++
			a.lastDropped = m.Time.UTC()
			return nil
		}
	}
	if err := a.closeRun(); err != nil {
		return err
	}
	if from := a.head.applied + 1; gap {
		a.s.log.Error("stream gap", "from", from, "to", m.StreamSeq-1, "subject", m.Subject)
		if err := a.add(gapRecord(m, from, m.StreamSeq-1), m.StreamSeq); err != nil {
			return err
		}
	}
	a.head.applied = m.StreamSeq
	if a.raws == nil {
		a.raws = make(map[uint64][]byte)
	}
	raw := m.Raw
	if rej != nil && len(raw) > RejectRawMax {
		// A refused message is kept for the record, bounded: its start
		// holds the header and kid.
		raw = raw[:RejectRawMax]
	}
	a.raws[m.StreamSeq] = raw
	if len(raw) > 0 || m.EnvelopeID != "" {
		if err := a.stageMessage(m.StreamSeq, storedMessage{Time: m.Time, ID: m.EnvelopeID, Raw: raw}); err != nil {
			return fmt.Errorf("ledger: stage message %d: %w", m.StreamSeq, err)
		}
	}
	if rej != nil {
		if err := a.add(rejection(m, 0, boundRejection(*rej)), m.StreamSeq); err != nil {
			return err
		}
		if rej.Code == event.RejectRevoked {
			return a.seeCredential(a.signerOf(m), a.head.seq)
		}
		return nil
	}
	return a.events(m)
}

// refuseMessage returns why the whole message m is refused — by the
// verifier, for carrying no events, or as a replay — or nil.
func (a *appender) refuseMessage(m *Message) (*event.RejectedData, error) {
	switch {
	case m.Reject != nil:
		return m.Reject, nil
	case len(m.Events) == 0:
		return &event.RejectedData{Code: event.RejectNoEvents, Reason: reasonNoEvents, Subject: m.Subject}, nil
	}
	if rej := a.revokedSigner(m); rej != nil {
		return rej, nil
	}
	if rej := a.untrustedRoot(m); rej != nil {
		return rej, nil
	}
	if m.EnvelopeID == "" {
		return nil, nil
	}
	replayed, err := a.wasSeen(m.EnvelopeID)
	if err != nil || !replayed {
		return nil, err
	}
	first := m.Events[0]
	code, reason, err := a.replayReason(m)
	if err != nil {
		return nil, err
	}
	return &event.RejectedData{
		Code: code, Reason: reason, Subject: m.Subject,
		Signer: first.Node, ClaimedType: string(first.Type), ClaimedID: m.EnvelopeID,
	}, nil
}

// closeRun writes the summary of the open run of counted messages, if any.
func (a *appender) closeRun() error {
	r := a.rej.Run
	if r == nil {
		return nil
	}
	a.rej.Run, a.rejDirty = nil, true
	return a.add(r.summary(), r.To)
}

// countReject counts a rejection in this Append's RejectStats.
func (a *appender) countReject(code event.RejectCode) {
	if a.rejCodes == nil {
		a.rejCodes = map[event.RejectCode]uint64{}
	}
	a.rejCodes[code]++
}

func (a *appender) events(m *Message) error {
	accepted := false
	for i, ev := range m.Events {
		code, reason, err := a.refuse(ev)
		if err != nil {
			return err
		}
		if code != "" {
			a.countReject(code)
			err = a.add(rejection(m, i, event.RejectedData{
				Code: code, Reason: reason, Subject: m.Subject,
				Signer: ev.Node, ClaimedType: string(ev.Type), ClaimedID: ev.ID,
			}), m.StreamSeq)
			if err != nil {
				return err
			}
			continue
		}
		if err := a.markSeen(ev.ID, m.StreamSeq); err != nil {
			return err
		}
		if ev.Type == event.GoalSubmitted && ev.Run != "" {
			if err := a.markRun(ev.Run); err != nil {
				return err
			}
		}
		ev.Time = ev.Time.UTC()
		if err := a.add(ev, m.StreamSeq); err != nil {
			return err
		}
		switch ev.Type {
		case event.CredentialRevoked:
			a.revoke(ev, m.StreamSeq)
		case event.RootAdded, event.RootRetired:
			a.stageRoot(ev, m.StreamSeq)
		}
		if !accepted {
			if c := a.signerOf(m); c != nil {
				if err := a.seeCredential(c, a.head.seq); err != nil {
					return err
				}
			}
		}
		accepted = true
	}
	if accepted && m.EnvelopeID != "" {
		return a.markSeen(m.EnvelopeID, m.StreamSeq)
	}
	return nil
}

// refuse returns why ev cannot be appended (a code and its reason), or no
// code.
func (a *appender) refuse(ev event.Event) (event.RejectCode, string, error) {
	switch {
	case ev.ID == "":
		return event.RejectMalformed, reasonNoID, nil
	case len(ev.Data) > 0 && !canonjson.Valid(ev.Data):
		return event.RejectBadPayload, reasonBadData, nil
	case ev.Type == event.CredentialRevoked:
		if _, ok := decodeRevocation(ev.Data); !ok {
			return event.RejectBadPayload, reasonBadRevocation, nil
		}
	case ev.Type == event.RootAdded || ev.Type == event.RootRetired:
		if reason := a.rootsOf().checkRoot(ev, a.s.genesisID()); reason != "" {
			return event.RejectBadPayload, reason, nil
		}
	}
	dup, err := a.wasSeen(ev.ID)
	if dup || err != nil {
		return event.RejectDuplicateEvent, reasonDuplicate + ev.ID, err
	}
	if ev.Type == event.GoalSubmitted && ev.Run != "" {
		known, err := a.runKnown(ev.Run)
		if known || err != nil {
			return event.RejectDuplicateRun, reasonDuplicateRun + ev.Run + " (a goal was already submitted for it)", err
		}
	}
	return "", "", nil
}

// runKnown reports whether a goal.submitted for run is in the ledger or
// staged by this Append: a run id names one run, ever.
func (a *appender) runKnown(run string) (bool, error) {
	if a.runs[run] {
		return true, nil
	}
	_, err := a.s.get(goalRunKey(run))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// markRun records that run has its goal.submitted.
func (a *appender) markRun(run string) error {
	if a.runs == nil {
		a.runs = map[string]bool{}
	}
	a.runs[run] = true
	if err := a.b.Set(goalRunKey(run), nil, nil); err != nil {
		return fmt.Errorf("ledger: stage run %s: %w", run, err)
	}
	return nil
}

// add gives ev the next position and stages it with its hash and indexes.
func (a *appender) add(ev event.Event, stream uint64) error {
	ev.Seq, ev.StreamSeq = a.head.seq+1, stream
	// The scratch holds the previous hash then the record: what chain
	// hashes, in one piece.
	buf, err := appendRecord(append(a.scratch.rec[:0], a.head.hash[:]...), &ev)
	if err != nil {
		return err
	}
	a.scratch.rec = buf
	hash, rec := sha256.Sum256(buf), buf[len(a.head.hash):]
	if err := a.stage(ev, rec, hash); err != nil {
		return fmt.Errorf("ledger: stage record %d: %w", ev.Seq, err)
	}
	a.head.seq, a.head.hash = ev.Seq, hash
	a.out = append(a.out, ev)
	a.times = append(a.times, streamTime(ev, a.msgTime, a.msgStored))
	return nil
}

// stage writes record ev (encoded as rec) and its hash and index keys
// into the batch. The batch copies keys and values: one scratch key
// serves them all.
func (a *appender) stage(ev event.Event, rec []byte, hash [32]byte) error {
	a.scratch.key = appendSeqKey(a.scratch.key[:0], prefixEvent, ev.Seq)
	if err := a.b.Set(a.scratch.key, rec, nil); err != nil {
		return err
	}
	a.scratch.key = appendSeqKey(a.scratch.key[:0], prefixHash, ev.Seq)
	if err := a.b.Set(a.scratch.key, hash[:], nil); err != nil {
		return err
	}
	if ev.Run != "" {
		a.scratch.key = binary.BigEndian.AppendUint64(appendRunPrefix(a.scratch.key[:0], ev.Run), ev.Seq)
		if err := a.b.Set(a.scratch.key, nil, nil); err != nil {
			return err
		}
	}
	a.scratch.key = appendTimeKey(a.scratch.key[:0], streamTime(ev, a.msgTime, a.msgStored), ev.Seq)
	if err := a.b.Set(a.scratch.key, nil, nil); err != nil {
		return err
	}
	a.scratch.key = binary.BigEndian.AppendUint64(appendTypePrefix(a.scratch.key[:0], ev.Type), ev.Seq)
	return a.b.Set(a.scratch.key, nil, nil)
}

// stageMessage writes m at m/<stream> straight into the batch.
func (a *appender) stageMessage(stream uint64, m storedMessage) error {
	a.scratch.key = appendSeqKey(a.scratch.key[:0], prefixMessage, stream)
	op := a.b.SetDeferred(len(a.scratch.key), m.size())
	copy(op.Key, a.scratch.key)
	if b := m.appendTo(op.Value[:0]); len(b) != len(op.Value) || &b[0] != &op.Value[0] {
		return fmt.Errorf("ledger: message %d encodes to %d bytes, not %d", stream, len(b), len(op.Value))
	}
	return op.Finish()
}
