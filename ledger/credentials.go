package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// The credentials index: one entry per credential the ledger saw signing —
// the signer of a message with an accepted event, or of one refused as
// revoked (credential_revoked) — written in the batch of the first such
// record: how an administrator finds the NATS user keys of an identity to
// revoke. It is bounded by the credentials the root issued, not by events.
// Entries are c/<kind>\x00<id>\x00<issued, unix ns><key fingerprint> →
// CredentialSeen (JSON).
//
// An Append reads the credential the verifier authenticated
// (Message.Signer); an Import and the format upgrade read it back from
// the stored message's header (envelope.PeekCredential), which is the
// same credential, so a copy or an upgraded ledger holds the same entries
// as a ledger that folded the stream.

// CredentialSeen is one entry of the credentials index.
type CredentialSeen struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Key is the fingerprint of the credential's public key
	// (trust.Fingerprint).
	Key string `json:"key"`
	// NATSUser is the NATS user key the credential names ("" if none).
	NATSUser string    `json:"nats_user,omitempty"`
	Issued   time.Time `json:"issued"`
	Expires  time.Time `json:"expires"`
	// FirstSeq is the ledger seq of the first record that showed it
	// signing: an accepted event, or the refusal of its message as
	// revoked.
	FirstSeq uint64 `json:"first_seq"`
}

// maxCachedCreds bounds the store's memory of credentials: parsed ones,
// and keys known to be indexed.
const maxCachedCreds = 4096

// credentialPrefix is the key prefix of the entries of kind and id.
func credentialPrefix(kind, id string) []byte {
	return []byte(prefixCredential + kind + "\x00" + id + "\x00")
}

func credentialKey(c *trust.Credential) []byte {
	var ns int64
	if !c.Issued.IsZero() {
		ns = max(c.Issued.UnixNano(), 0)
	}
	k := binary.BigEndian.AppendUint64(credentialPrefix(c.Kind, c.ID), uint64(ns))
	return append(k, trust.Fingerprint(c.PublicKey)...)
}

// signerOf returns the credential that signed m: the verifier's, or the
// one its header carries when the caller did not set it (nil when none).
func (a *appender) signerOf(m *Message) *trust.Credential {
	if m.Signer != nil {
		return m.Signer
	}
	return a.s.readCredential(m.Raw)
}

// readCredential reads the credential in the header of a stored message
// (unverified: the ledger verified it when it folded the message), or nil.
func (s *Store) readCredential(raw []byte) *trust.Credential {
	cred := envelope.PeekCredential(raw)
	if cred == "" {
		return nil
	}
	if c, ok := s.creds[cred]; ok {
		return c
	}
	c, err := trust.ReadCredential(cred)
	if err != nil {
		c = nil
	}
	if len(s.creds) >= maxCachedCreds {
		clear(s.creds)
	}
	s.creds[cred] = c
	return c
}

// seeCredential stages c's entry, first seen at record seq, unless the
// index has it.
func (a *appender) seeCredential(c *trust.Credential, seq uint64) error {
	k := a.s.credentialKeyOf(c)
	if a.credsStaged[k] || a.s.credsIndexed[k] {
		return nil
	}
	key := []byte(k)
	_, err := a.s.get(key)
	switch {
	case err == nil:
		a.s.indexedCredential(k)
		return nil
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("ledger: look up credential of %s %s: %w", c.Kind, c.ID, err)
	}
	v, err := json.Marshal(CredentialSeen{
		Kind: c.Kind, ID: c.ID, Key: trust.Fingerprint(c.PublicKey), NATSUser: c.NATSUser,
		Issued: c.Issued.UTC(), Expires: c.Expires.UTC(), FirstSeq: seq,
	})
	if err != nil {
		return fmt.Errorf("ledger: encode credential of %s %s: %w", c.Kind, c.ID, err)
	}
	if err := a.b.Set(key, v, nil); err != nil {
		return fmt.Errorf("ledger: stage credential of %s %s: %w", c.Kind, c.ID, err)
	}
	if a.credsStaged == nil {
		a.credsStaged = map[string]bool{}
	}
	a.credsStaged[k] = true
	return nil
}

// credentialKeyOf is credentialKey(c), remembered by credential: the
// verifier hands every message of a signer the same parsed credential.
func (s *Store) credentialKeyOf(c *trust.Credential) string {
	if k, ok := s.credKeys[c]; ok {
		return k
	}
	k := string(credentialKey(c))
	if len(s.credKeys) >= maxCachedCreds {
		clear(s.credKeys)
	}
	s.credKeys[c] = k
	return k
}

// indexedCredential remembers that the index holds key k.
func (s *Store) indexedCredential(k string) {
	if len(s.credsIndexed) >= maxCachedCreds {
		clear(s.credsIndexed)
	}
	s.credsIndexed[k] = true
}

// credentialsCommitted remembers what an Append indexed once it committed.
func (a *appender) credentialsCommitted() {
	for k := range a.credsStaged {
		a.s.indexedCredential(k)
	}
}

// rebuildCredential indexes the signer of record ev, read from raw (the
// stored message it came in), as Append did: once per message, at its
// first accepted event or at its refusal as revoked.
func (a *appender) rebuildCredential(ev event.Event, raw []byte) error {
	if ev.StreamSeq == a.credStream {
		return nil // this message's signer is indexed
	}
	switch {
	case ev.Type == event.Rejected:
		var d event.RejectedData
		if json.Unmarshal(ev.Data, &d) != nil || d.Code != event.RejectRevoked {
			return nil
		}
	case local(ev.Type):
		return nil
	}
	c := a.s.readCredential(raw)
	if c == nil {
		return nil
	}
	a.credStream = ev.StreamSeq
	return a.seeCredential(c, ev.Seq)
}

// credentialIndexBatch bounds one batch of the credentials index rebuild.
const credentialIndexBatch = 4096

// buildCredentialIndex writes the credentials index from the records and
// their stored messages (format 2 → 3). An entry written again is the
// same, so an interrupted rebuild runs again at the next Open.
func (s *Store) buildCredentialIndex() error {
	start := time.Now()
	a := &appender{s: s, b: s.db.NewBatch()}
	defer func() { a.b.Close() }()
	var n uint64
	for rec, err := range s.Scan(1) {
		if err != nil {
			return fmt.Errorf("ledger: build credentials index in %s: %w", s.dir, err)
		}
		n++
		if err := a.rebuildCredential(rec.Event, rec.Raw); err != nil {
			return err
		}
		if a.b.Count() >= credentialIndexBatch {
			if err := pebblelog.SyncCommit(a.b); err != nil {
				return fmt.Errorf("ledger: build credentials index at %d: %w", rec.Event.Seq, err)
			}
			a.b.Close()
			a.b = s.db.NewBatch()
		}
	}
	if err := pebblelog.SyncCommit(a.b); err != nil {
		return fmt.Errorf("ledger: build credentials index: %w", err)
	}
	if n > 0 {
		s.log.Info("ledger upgrade: credentials indexed", "records", n, "credentials", len(a.credsStaged), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// Credentials returns the index's entries for the credentials of kind and
// id, oldest issued first.
func (s *Store) Credentials(kind, id string) ([]CredentialSeen, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	p := credentialPrefix(kind, id)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("ledger: credentials of %s %s: %w", kind, id, err)
	}
	out := []CredentialSeen{}
	for ok := it.First(); ok; ok = it.Next() {
		var c CredentialSeen
		if err := json.Unmarshal(it.Value(), &c); err != nil {
			_ = it.Close()
			return nil, s.wrapRead(fmt.Errorf("%w: credentials index at %q: %w", ErrCorrupt, it.Key(), err))
		}
		// An id that holds the separator cannot pass for another.
		if c.Kind == kind && c.ID == id && bytes.HasPrefix(it.Key(), p) {
			out = append(out, c)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, s.wrapRead(fmt.Errorf("ledger: credentials of %s %s: %w", kind, id, err))
	}
	return out, nil
}
