package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/cockroachdb/pebble/v2"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	// OK is true when every check passed.
	OK bool
	// Events is how many records were checked and found good.
	Events uint64
	// Head is the chain hash recomputed up to the last good record.
	Head [32]byte
	// FirstBadSeq is the first position that failed (0 when OK).
	FirstBadSeq uint64
	// Err says what failed there ("" when OK).
	Err string
	// Versions counts the messages re-verified (with a verifier) by the
	// protocol version each declares: each was judged by its version's
	// rules.
	Versions map[int]uint64
}

// Verify recomputes the whole chain from seq 1 over a snapshot: every
// position present in order, each stored hash equal to the recomputed one,
// each record's Seq its position and stream seqs non-decreasing with no
// stream message missing (every stream seq up to the head's applied one has
// a record or lies in the range of an event.Gap record, of an
// event.RejectedSummary record, or of the rejection limiter's open run), and the head equal to
// the last record. With v != nil it also re-verifies the message of
// every accepted (non-Rejected, non-Gap) record with v.Verify(raw, subject,
// message time) — by the rules of the protocol version the message
// declares, so history written under older rules keeps verifying — and
// checks the record equals the event the message carries (id, type, run,
// node, time, data) and that its signer's credential was not revoked by an
// accepted credential.revoked of an earlier message. Events of types v does not know verify like any other
// when their signer may publish in the category. Without v a changed raw
// message goes unnoticed. The error is for failures to read (wrapping
// ErrCorrupt when Pebble found its files damaged); findings go in the
// report. An OK verification moves the verified checkpoint (CheckChain) to
// the head it verified.
func (s *Store) Verify(v *envelope.Verifier) (VerifyReport, error) {
	if err := s.acquire(); err != nil {
		return VerifyReport{}, err
	}
	defer s.release()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	c := &checker{snap: snap, next: 1, versions: map[int]uint64{}, roots: rootSet{}}
	if v != nil {
		// Each message is judged with the roots added before it.
		c.v, c.genesis = v.WithKeyring(checkerRoots{&c.roots}), v.Genesis().KeyID()
	}
	rep, err := c.run()
	rep.Versions = c.versions
	if err != nil {
		return VerifyReport{}, s.wrapRead(fmt.Errorf("ledger: verify: %w", err))
	}
	if !rep.OK {
		s.chainBad.Store(true)
		s.log.Error("ledger verify failed", "seq", rep.FirstBadSeq, "reason", rep.Err)
		return rep, nil
	}
	if err := s.advanceCheckpoint(Checkpoint{Seq: rep.Events, Hash: rep.Head}); err != nil {
		return VerifyReport{}, err
	}
	s.chainOK.Store(true)
	return rep, nil
}

// checker walks the chain for Verify.
type checker struct {
	ctx    context.Context // nil: runs to the end
	v      *envelope.Verifier
	snap   *pebble.Snapshot
	next   uint64 // position expected next
	prev   [32]byte
	stream uint64 // last stream seq seen
	msgs   msgCache
	// versions counts re-verified messages by protocol version.
	versions map[int]uint64
	// revoked are the revocations of the accepted records checked so far;
	// roots the roots their trust records added and retired, genesis the
	// genesis root's KeyID.
	revoked revocations
	roots   rootSet
	genesis string
	env     struct {
		stream uint64
		env    *envelope.Envelope
		err    error
	}
}

func (c *checker) run() (VerifyReport, error) {
	var rep VerifyReport
	bad := func(seq uint64, format string, args ...any) (VerifyReport, error) {
		rep.FirstBadSeq, rep.Err = seq, fmt.Sprintf(format, args...)
		return rep, nil
	}
	h, err := c.head()
	if err != nil {
		return rep, err
	}
	lower := []byte(prefixEvent)
	if c.next > 1 { // CheckChain: from after its checkpoint
		lower = eventKey(c.next)
	}
	it, err := c.snap.NewIter(&pebble.IterOptions{
		LowerBound: lower,
		UpperBound: prefixEnd([]byte(prefixEvent)),
	})
	if err != nil {
		return rep, err
	}
	defer it.Close()
	var atHead VerifyReport // the report as of the head's position
	for ok := it.First(); ok; ok = it.Next() {
		seq, _ := indexSeq([]byte(prefixEvent), it.Key())
		if c.ctx != nil && seq%checkEvery == 0 {
			if err := c.ctx.Err(); err != nil {
				return rep, err
			}
		}
		if seq != c.next {
			return bad(c.next, "record %d is missing (next present is key %q)", c.next, it.Key())
		}
		problem, err := c.record(seq, it.Value())
		if err != nil {
			return rep, err
		}
		if problem != "" {
			return bad(seq, "%s", problem)
		}
		rep.Events, rep.Head = seq, c.prev
		if seq == h.seq {
			atHead = rep
		}
		c.next++
	}
	if err := it.Error(); err != nil {
		return rep, err
	}
	switch last := c.next - 1; {
	case h.seq > last:
		return bad(last+1, "head is at %d but records end at %d", h.seq, last)
	case h.seq < last:
		rep = atHead
		return bad(h.seq+1, "record %d lies beyond the head %d", h.seq+1, h.seq)
	case h.hash != c.prev:
		return bad(h.seq, "head hash %x differs from the chain's %x", h.hash, c.prev)
	case h.applied != c.stream:
		// The messages after the last record may be counted in the open
		// run of the rejection limiter, whose summary is not written yet.
		st, err := loadRejectState(c.snap)
		if err != nil {
			return rep, err
		}
		if r := st.Run; r == nil || r.From != c.stream+1 || r.To != h.applied || r.Count != r.To-r.From+1 {
			return bad(h.seq, "head says stream seq %d was applied, the records end at stream seq %d", h.applied, c.stream)
		}
	}
	rep.OK = true
	return rep, nil
}

func (c *checker) head() (head, error) {
	b, err := getFrom(c.snap, []byte(keyHead))
	if errors.Is(err, ErrNotFound) {
		return head{}, nil
	}
	if err != nil {
		return head{}, err
	}
	return decodeHead(b)
}

// record checks one record; it returns a problem, or an error for a failed
// read.
func (c *checker) record(seq uint64, rec []byte) (string, error) {
	stored, err := getFrom(c.snap, hashKey(seq))
	if errors.Is(err, ErrNotFound) {
		return fmt.Sprintf("hash of record %d is missing", seq), nil
	}
	if err != nil {
		return "", err
	}
	sum := chain(c.prev, rec)
	if !bytes.Equal(stored, sum[:]) {
		return fmt.Sprintf("record %d does not chain: stored hash %x, computed %x", seq, stored, sum), nil
	}
	ev, err := decodeRecord(seq, rec)
	switch {
	case err != nil:
		return err.Error(), nil
	case ev.Seq != seq:
		return fmt.Sprintf("record at %d says seq %d", seq, ev.Seq), nil
	case ev.StreamSeq < c.stream:
		return fmt.Sprintf("record %d has stream seq %d after %d", seq, ev.StreamSeq, c.stream), nil
	}
	if problem := c.covers(ev); problem != "" {
		return problem, nil
	}
	c.prev, c.stream = sum, ev.StreamSeq
	if c.v == nil || local(ev.Type) {
		return "", nil
	}
	return c.message(ev)
}

// covers checks that no stream message is missing before record ev: its
// stream seq is the previous record's (another record of one message) or
// the next one, or it is a Gap record for exactly the hole before its
// message, or a RejectedSummary counting exactly the messages after the
// previous record (up to its own stream seq). Append writes every stream
// message as at least one record or counts it in a summary, so a ledger
// that skips one otherwise lost it silently.
func (c *checker) covers(ev event.Event) string {
	if ev.Type == event.Gap {
		var g event.GapData
		if err := json.Unmarshal(ev.Data, &g); err != nil || g.From != c.stream+1 || g.To < g.From || ev.StreamSeq != g.To+1 {
			return fmt.Sprintf("gap record %d (stream seq %d, %s) does not cover the hole after stream seq %d", ev.Seq, ev.StreamSeq, ev.Data, c.stream)
		}
		return ""
	}
	if ev.Type == event.RejectedSummary {
		var r event.RejectedSummaryData
		if err := json.Unmarshal(ev.Data, &r); err != nil || r.From != c.stream+1 || r.To < r.From || ev.StreamSeq != r.To || r.Count != r.To-r.From+1 || sum(r.ByCode) != r.Count || sum(r.BySigner) != r.Count {
			return fmt.Sprintf("rejection summary %d (stream seq %d, %s) does not count the messages after stream seq %d", ev.Seq, ev.StreamSeq, ev.Data, c.stream)
		}
		return ""
	}
	if ev.StreamSeq > c.stream+1 {
		return fmt.Sprintf("record %d has stream seq %d after %d: stream seqs %d to %d are missing without a gap record", ev.Seq, ev.StreamSeq, c.stream, c.stream+1, ev.StreamSeq-1)
	}
	return ""
}

// message re-verifies the message of accepted record ev and compares.
func (c *checker) message(ev event.Event) (string, error) {
	env, problem, err := c.envelope(ev)
	if problem != "" || err != nil {
		return problem, err
	}
	for _, want := range env.Events {
		if want.ID == ev.ID {
			if !sameEvent(ev, want) {
				return fmt.Sprintf("record %d differs from event %s in its message (stream seq %d)", ev.Seq, ev.ID, ev.StreamSeq), nil
			}
			if problem := c.root(ev, env.Signer); problem != "" {
				return problem, nil
			}
			return c.revocation(ev, env.Signer), nil
		}
	}
	return fmt.Sprintf("record %d: event %s is not in its message (stream seq %d)", ev.Seq, ev.ID, ev.StreamSeq), nil
}

// root checks that the root that issued signer's credential was trusted
// at accepted record ev's stream position, and takes in the trust record
// ev is, if it is one.
func (c *checker) root(ev event.Event, signer *trust.Credential) string {
	if e, ok := c.roots.trustedAt(signer.Issuer, c.genesis, ev.StreamSeq); !ok {
		if e.retired != 0 {
			return fmt.Sprintf("record %d was accepted from %s %q, whose root %s the trust.root_retired at stream seq %d retired", ev.Seq, signer.Kind, signer.ID, signer.Issuer, e.retired)
		}
		return fmt.Sprintf("record %d was accepted from %s %q, whose root %s was not trusted at stream seq %d", ev.Seq, signer.Kind, signer.ID, signer.Issuer, ev.StreamSeq)
	}
	if ev.Type != event.RootAdded && ev.Type != event.RootRetired {
		return ""
	}
	if reason := c.roots.checkRoot(ev, c.genesis); reason != "" {
		return fmt.Sprintf("record %d: a %s accepted that a ledger refuses: %s", ev.Seq, ev.Type, reason)
	}
	c.roots.apply(ev, ev.StreamSeq)
	return ""
}

// checkerRoots is the keyring of the roots a checker has folded so far.
type checkerRoots struct{ r *rootSet }

func (k checkerRoots) RootKey(id string) (ed25519.PublicKey, bool) {
	e, ok := (*k.r)[id]
	return e.key, ok && e.key != nil
}

// revocation checks that accepted record ev, signed by signer, was not
// signed by a credential an earlier message revoked, and takes in the
// revocation ev makes, if it is one.
func (c *checker) revocation(ev event.Event, signer *trust.Credential) string {
	if r, ok := c.revoked[credIdentity{signer.Kind, signer.ID}]; ok && r.stream < ev.StreamSeq && !signer.Issued.After(r.before) {
		return fmt.Sprintf("record %d was accepted from %s %q, whose credential the revocation at stream seq %d revoked", ev.Seq, signer.Kind, signer.ID, r.stream)
	}
	if ev.Type != event.CredentialRevoked {
		return ""
	}
	d, ok := decodeRevocation(ev.Data)
	if !ok {
		return fmt.Sprintf("record %d: a credential.revoked accepted without a valid payload", ev.Seq)
	}
	if c.revoked == nil {
		c.revoked = revocations{}
	}
	c.revoked.apply(d, ev.StreamSeq)
	return ""
}

// envelope verifies the message of stream seq ev.StreamSeq once per message.
func (c *checker) envelope(ev event.Event) (*envelope.Envelope, string, error) {
	if c.env.stream != ev.StreamSeq {
		m, ok, err := c.msgs.get(c.snap, ev.StreamSeq)
		if err != nil {
			return nil, "", err
		}
		c.env.stream, c.env.env, c.env.err = ev.StreamSeq, nil, errors.New("message is missing")
		if ok {
			c.env.env, c.env.err = c.v.Verify(m.Raw, ev.Subject, m.Time)
			if c.env.err == nil {
				c.versions[c.env.env.Version]++
			}
		}
	}
	if c.env.err != nil {
		return nil, fmt.Sprintf("record %d: message at stream seq %d: %v", ev.Seq, ev.StreamSeq, c.env.err), nil
	}
	return c.env.env, "", nil
}

// sum adds the counts of a summary.
func sum[K comparable](m map[K]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func sameEvent(got, want event.Event) bool {
	return got.ID == want.ID && got.Type == want.Type && got.Run == want.Run &&
		got.Node == want.Node && got.Time.Equal(want.Time) && sameJSON(got.Data, want.Data)
}

// sameJSON compares payloads in their canonical (encoding/json) form.
func sameJSON(a, b json.RawMessage) bool {
	ca, err1 := json.Marshal(a)
	cb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}
