package envelope

import (
	"bytes"
	"crypto/ed25519"
	"sync"
)

// Limits of a verifier's memory of messages (seenMessages).
const (
	maxSeenMessages = 256
	maxSeenBytes    = 1 << 20
	maxSeenMessage  = 256 << 10
)

// seen is this process's memory of the messages it signed or whose
// signature it verified.
var seen seenMessages

// seenMessages remembers the most recent messages signed with a key (by
// this process, or verified with the key), by their signature segment: a
// copy of the message, its parse once a verifier made it, and the key. An
// entry is used only for a message byte for byte the same; the oldest
// entries go first.
type seenMessages struct {
	mu    sync.Mutex
	m     map[string]*seenMessage
	order []string // keys of m, oldest first
	bytes int
}

type seenMessage struct {
	raw []byte
	j   *jws
	key ed25519.PublicKey
}

// sigSegment is the part of raw after its last dot: the signature, the
// key the message is remembered by.
func sigSegment(raw []byte) []byte {
	return raw[bytes.LastIndexByte(raw, '.')+1:]
}

// lookup returns the parse of raw (nil if none was made) and the key it
// is signed with, when raw was remembered; nil, nil when not. The parse
// is shared: read-only.
func (s *seenMessages) lookup(raw []byte) (*jws, ed25519.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[string(sigSegment(raw))]
	if e == nil || !bytes.Equal(e.raw, raw) {
		return nil, nil
	}
	return e.j, e.key
}

// remember records that raw, parsed as j (nil: not parsed), is signed by
// key. j's parts must not be written to from here on; nothing of raw is
// kept (its caller may reuse it).
func (s *seenMessages) remember(raw []byte, j *jws, key ed25519.PublicKey) {
	if len(raw) > maxSeenMessage {
		return
	}
	own := bytes.Clone(raw)
	e := &seenMessage{raw: own, key: bytes.Clone(key)}
	if j != nil {
		kept := *j
		kept.signing = own[:len(j.signing)] // parse's signing is a part of raw
		e.j = &kept
	}
	k := string(sigSegment(e.raw))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*seenMessage)
	}
	if old := s.m[k]; old != nil {
		s.bytes -= len(old.raw)
	} else {
		s.order = append(s.order, k)
	}
	s.m[k] = e
	s.bytes += len(e.raw)
	for len(s.order) > maxSeenMessages || s.bytes > maxSeenBytes {
		oldest := s.order[0]
		s.order = s.order[1:]
		s.bytes -= len(s.m[oldest].raw)
		delete(s.m, oldest)
	}
}

// payloadBytes is the size of the payloads of c.
func payloadBytes(c *claims) int {
	n := len(c.Data)
	for _, it := range c.Batch {
		n += len(it.Data)
	}
	return n
}
