package ledger

import (
	"cmp"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger/history"
)

// Roots of trust (protocol version 5). A ledger trusts a set of roots:
// the genesis root (SetGenesis: the one every node is configured with,
// root.pub) from the start, and each root an accepted trust.root_added
// record adds from the next stream message on; an accepted
// trust.root_retired record ends the trust in its root from the next
// stream message on. From then on Append refuses every message whose
// signer's credential that root issued (code root_retired), while the
// records before stay. Like the revocations, the set is a function of the
// ledger's trust records alone (Append refuses one whose payload does not
// say what it adds or retires, that adds a root known already, that
// retires a root not trusted, or that would leave no root trusted), read
// through the type index when the store opens or an Import ends — so
// every ledger node folding the same stream trusts the same roots, a
// restart or an imported copy included. A root once retired is never
// trusted again.
//
// The verifier that judges the stream for the ledger verifies credentials
// with the genesis and the keys of the roots the ledger added
// (envelope.Verifier.UseLedgerRoots with the Store as keyring); the
// follower commits a trust.root_added before it verifies the next message,
// so a credential of a root added at stream seq n verifies from n+1 on,
// on every node.

// rootEntry is one root the ledger knows.
type rootEntry struct {
	key ed25519.PublicKey // nil for the genesis before SetGenesis
	// added is the stream seq of the trust.root_added that added it (0:
	// the genesis); retired that of the trust.root_retired that retired
	// it (0: trusted).
	added, retired uint64
}

// rootSet is the roots a ledger knows, by KeyID. It is never changed once
// published (Store.roots): an Append stages a copy.
type rootSet map[string]rootEntry

// trustedAt reports whether root id is trusted for a message at stream
// seq stream, genesis being the genesis's KeyID ("" when unknown: a root
// the set does not hold then passes for it).
func (r rootSet) trustedAt(id, genesis string, stream uint64) (e rootEntry, ok bool) {
	e, known := r[id]
	switch {
	case !known && (genesis == "" || id == genesis):
		return rootEntry{}, true
	case !known:
		return e, false
	}
	return e, e.added < stream && (e.retired == 0 || stream <= e.retired)
}

// trusted lists the KeyIDs trusted after every record folded so far.
func (r rootSet) trusted(genesis string) []string {
	var out []string
	if _, known := r[genesis]; !known && genesis != "" {
		out = append(out, genesis)
	}
	for id, e := range r {
		if e.retired == 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Reasons of refused trust events.
const (
	reasonBadRootAdded   = "trust.root_added payload must carry an Ed25519 public key (key, hex or base64url) and its fingerprint (key_id)"
	reasonBadRootRetired = "trust.root_retired payload must name a root (key_id)"
)

// checkRoot judges a trust.root_added or trust.root_retired payload
// against the roots r as of now: the reason it is refused, or "".
func (r rootSet) checkRoot(ev event.Event, genesis string) string {
	switch ev.Type {
	case event.RootAdded:
		d, key, ok := decodeRootAdded(ev.Data)
		switch {
		case !ok:
			return reasonBadRootAdded
		case genesis == "":
			return fmt.Sprintf("root %s cannot be added: the ledger was not given its genesis root", d.KeyID)
		case d.KeyID == genesis:
			return fmt.Sprintf("root %s is the genesis root", d.KeyID)
		case !trust.VerifyRootProof(key, genesis, d.Proof):
			return fmt.Sprintf("trust.root_added of root %s lacks the root's proof for the cluster of genesis root %s (proof: its signature, trust.RootProof)", d.KeyID, genesis)
		}
		if e, known := r[d.KeyID]; known {
			if e.retired != 0 {
				return fmt.Sprintf("root %s was retired at stream seq %d and is never trusted again", d.KeyID, e.retired)
			}
			return fmt.Sprintf("root %s is trusted already (added at stream seq %d)", d.KeyID, e.added)
		}
	case event.RootRetired:
		var d event.RootRetiredData
		if json.Unmarshal(ev.Data, &d) != nil || d.KeyID == "" {
			return reasonBadRootRetired
		}
		trusted := r.trusted(genesis)
		if !slices.Contains(trusted, d.KeyID) {
			if e, known := r[d.KeyID]; known && e.retired != 0 {
				return fmt.Sprintf("root %s was retired already at stream seq %d", d.KeyID, e.retired)
			}
			if genesis == "" {
				return fmt.Sprintf("root %s is not a root this ledger added, and the ledger was not given its genesis root", d.KeyID)
			}
			return fmt.Sprintf("root %s is not a trusted root of this cluster (trusted: %v)", d.KeyID, trusted)
		}
		if len(trusted) == 1 {
			return fmt.Sprintf("root %s is the last trusted root: add its successor (trust.root_added) before retiring it", d.KeyID)
		}
	}
	return ""
}

// decodeRootAdded reads a trust.root_added payload and its key
// (trust.DecodeRootAdded).
func decodeRootAdded(data []byte) (event.RootAddedData, ed25519.PublicKey, bool) {
	return trust.DecodeRootAdded(data)
}

// apply folds an accepted trust record, at stream seq stream, into r.
func (r rootSet) apply(ev event.Event, stream uint64) {
	switch ev.Type {
	case event.RootAdded:
		if d, key, ok := decodeRootAdded(ev.Data); ok {
			r[d.KeyID] = rootEntry{key: key, added: stream}
		}
	case event.RootRetired:
		var d event.RootRetiredData
		if json.Unmarshal(ev.Data, &d) == nil && d.KeyID != "" {
			e := r[d.KeyID] // the genesis has no entry (nor key) before
			e.retired = stream
			r[d.KeyID] = e
		}
	}
}

// SetGenesis tells the store the cluster's genesis root: trusted from the
// start until a trust.root_retired retires it. The follower sets it from
// its verifier's root (root.pub); it must be the same on every node.
func (s *Store) SetGenesis(pub ed25519.PublicKey) {
	s.genesis.Store(&genesisRoot{key: pub, id: trust.Fingerprint(pub)})
}

type genesisRoot struct {
	key ed25519.PublicKey
	id  string
}

func (s *Store) genesisID() string {
	if g := s.genesis.Load(); g != nil {
		return g.id
	}
	return ""
}

// RootKey is the public key of a root a trust.root_added record of the
// ledger added (retired or not) or of the genesis: the store is the
// keyring of the verifier that judges the stream for it
// (envelope.Verifier.UseLedgerRoots).
func (s *Store) RootKey(id string) (ed25519.PublicKey, bool) {
	if g := s.genesis.Load(); g != nil && g.id == id {
		return g.key, true
	}
	r := s.roots.Load()
	if r == nil {
		return nil, false
	}
	e, ok := (*r)[id]
	return e.key, ok && e.key != nil
}

// TrustedRoot is a root a ledger knows (Store.Roots); the type lives in
// ledger/history, which agentctl reads without linking the ledger.
type TrustedRoot = history.Root

// Roots lists the roots the ledger knows: the genesis first, then the
// added ones by the stream seq that added them.
func (s *Store) Roots() []TrustedRoot {
	var r rootSet
	if p := s.roots.Load(); p != nil {
		r = *p
	}
	g := s.genesis.Load()
	var out []TrustedRoot
	if g != nil {
		e := r[g.id]
		out = append(out, TrustedRoot{KeyID: g.id, Key: base64.RawURLEncoding.EncodeToString(g.key), Genesis: true, RetiredStream: e.retired})
	}
	for _, id := range slices.Sorted(maps.Keys(r)) {
		e := r[id]
		if g != nil && id == g.id {
			continue
		}
		t := TrustedRoot{KeyID: id, AddedStream: e.added, RetiredStream: e.retired}
		if e.key != nil {
			t.Key = base64.RawURLEncoding.EncodeToString(e.key)
		} else {
			t.Genesis = true
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b TrustedRoot) int {
		if a.Genesis != b.Genesis {
			if a.Genesis {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.AddedStream, b.AddedStream)
	})
	return out
}

// currentRoots is the set as committed.
func (s *Store) currentRoots() rootSet {
	if p := s.roots.Load(); p != nil {
		return *p
	}
	return rootSet{}
}

// loadRoots reads the roots from the ledger's trust records (the type
// index), in ledger order.
func (s *Store) loadRoots() error {
	var recs []event.Event
	for _, t := range []event.Type{event.RootAdded, event.RootRetired} {
		for rec, err := range s.ScanType(t, 1) {
			if err != nil {
				return fmt.Errorf("ledger: read roots: %w", err)
			}
			recs = append(recs, rec.Event)
		}
	}
	slices.SortFunc(recs, func(a, b event.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	r := rootSet{}
	for _, ev := range recs {
		r.apply(ev, ev.StreamSeq)
	}
	s.roots.Store(&r)
	return nil
}

// rootsOf returns the roots as this Append sees them: what it staged, or
// what the store holds.
func (a *appender) rootsOf() rootSet {
	if a.roots != nil {
		return a.roots
	}
	return a.s.currentRoots()
}

// untrustedRoot returns the refusal of m when the root that issued its
// signer's credential is not trusted at its stream position — retired
// (root_retired), or not yet added (unknown_signer, as the verifier says
// of a root it does not know) — or nil.
func (a *appender) untrustedRoot(m *Message) *event.RejectedData {
	c := a.signerOf(m)
	if c == nil {
		return nil
	}
	e, ok := a.rootsOf().trustedAt(c.Issuer, a.s.genesisID(), m.StreamSeq)
	if ok {
		return nil
	}
	first := m.Events[0]
	rej := &event.RejectedData{
		Code:    event.RejectUnknownSigner,
		Reason:  envelope.ReasonUnknownSigner(first.Node),
		Subject: m.Subject, Signer: first.Node, ClaimedType: string(first.Type), ClaimedID: m.EnvelopeID,
	}
	if e.retired != 0 && e.retired < m.StreamSeq {
		rej.Code = event.RejectRootRetired
		rej.Reason = fmt.Sprintf("the credential of %s %q was issued by root %s, retired at stream seq %d", c.Kind, c.ID, c.Issuer, e.retired)
	}
	return rej
}

// stageRoot folds an accepted trust record into this Append's copy of
// the roots: it applies from the next message on.
func (a *appender) stageRoot(ev event.Event, stream uint64) {
	if a.roots == nil {
		a.roots = maps.Clone(a.s.currentRoots())
	}
	a.roots.apply(ev, stream)
}

// rootsCommitted publishes what an Append staged once it committed.
func (a *appender) rootsCommitted() {
	if a.roots != nil {
		r := a.roots
		a.s.roots.Store(&r)
	}
}
