package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Record is one ledger entry as read back.
type Record struct {
	// Event is the record, with Seq and StreamSeq set.
	Event event.Event
	// Hash is the chain hash at Event.Seq.
	Hash [32]byte
	// Raw is the signed message the record came in; nil for a Gap record or
	// a message stored without one. Records of one message share the slice:
	// do not modify it.
	Raw []byte
	// MessageTime is the stream timestamp of that message (zero for a Gap
	// record or when no message was stored).
	MessageTime time.Time
	// MessageID is that message's envelope id (jti), "" if unknown.
	MessageID string
}

// encodeRecord is the canonical record encoding the chain hashes: the
// encoding/json encoding of ev (appendRecord).
func encodeRecord(ev event.Event) ([]byte, error) {
	return appendRecord(nil, &ev)
}

func decodeRecord(seq uint64, b []byte) (event.Event, error) {
	var ev event.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return event.Event{}, fmt.Errorf("%w: record %d: %w", ErrCorrupt, seq, err)
	}
	return ev, nil
}

// chain returns h(seq) = sha256(h(seq-1) || record bytes).
func chain(prev [32]byte, rec []byte) [32]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(rec)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// storedMessage is the value at m/<streamseq>.
type storedMessage struct {
	Time time.Time // stream timestamp
	ID   string    // envelope id (jti)
	Raw  []byte
}

const zeroTime = math.MinInt64

// encode: unix nanos (MinInt64 for zero) | uvarint len(id) | id | raw.
func (m storedMessage) encode() []byte {
	return m.appendTo(make([]byte, 0, m.size()))
}

// size is the length of m's encoding.
func (m storedMessage) size() int {
	var v [binary.MaxVarintLen64]byte
	return 8 + binary.PutUvarint(v[:], uint64(len(m.ID))) + len(m.ID) + len(m.Raw)
}

// appendTo appends m's encoding to dst.
func (m storedMessage) appendTo(dst []byte) []byte {
	ns := int64(zeroTime)
	if !m.Time.IsZero() {
		ns = m.Time.UnixNano()
	}
	b := binary.BigEndian.AppendUint64(dst, uint64(ns))
	b = binary.AppendUvarint(b, uint64(len(m.ID)))
	b = append(b, m.ID...)
	return append(b, m.Raw...)
}

func decodeMessage(stream uint64, b []byte) (storedMessage, error) {
	bad := fmt.Errorf("%w: message at stream seq %d is malformed", ErrCorrupt, stream)
	if len(b) < 9 {
		return storedMessage{}, bad
	}
	var m storedMessage
	if ns := int64(binary.BigEndian.Uint64(b)); ns != zeroTime {
		m.Time = time.Unix(0, ns).UTC()
	}
	n, k := binary.Uvarint(b[8:])
	if k <= 0 || uint64(len(b)-8-k) < n {
		return storedMessage{}, bad
	}
	rest := b[8+k:]
	m.ID = string(rest[:n])
	m.Raw = rest[n:]
	return m, nil
}

// ReasonRepublished starts the reason of an event.rejected record for a
// message whose id was seen before but whose bytes differ from the first
// copy: it verified, so only its signer could have made it — a re-signed
// duplicate (an outbox republishing after a restart), not a replay. Its
// effect is the same (none). Such records carry the code
// event.RejectRepublished, which is what programs test; the prefix only
// tells them apart in records written before codes existed.
const ReasonRepublished = "republished message id "

// Reasons recorded in ledger-made Rejected records, beside their codes
// (event.RejectCode). Each is made from the ledger's own deterministic
// state and the message, so every ledger writes the same text.
const (
	reasonReplayed     = "replayed message id "
	reasonRepublished  = ReasonRepublished
	reasonDuplicate    = "duplicate event id "
	reasonDuplicateRun = "duplicate run id "
	reasonNoEvents     = "message carries no events"
	reasonNoID         = "event without id"
	reasonBadData      = "event payload is not valid JSON"
)

// rejection builds the Rejected record for message m; n numbers the
// rejections made from one message.
func rejection(m *Message, n int, d event.RejectedData) event.Event {
	data, _ := json.Marshal(d) // a struct of strings: cannot fail
	return event.Event{
		ID:      fmt.Sprintf("rej-%d-%d", m.StreamSeq, n),
		Type:    event.Rejected,
		Time:    m.Time.UTC(),
		Subject: m.Subject,
		Data:    data,
	}
}

// gapRecord builds the Gap record for stream seqs from..to, found before m.
func gapRecord(m *Message, from, to uint64) event.Event {
	data, _ := json.Marshal(event.GapData{From: from, To: to})
	return event.Event{
		ID:      fmt.Sprintf("gap-%d", from),
		Type:    event.Gap,
		Time:    m.Time.UTC(),
		Subject: m.Subject,
		Data:    data,
	}
}

// local reports whether t is a ledger-made record type.
func local(t event.Type) bool {
	return t == event.Rejected || t == event.Gap || t == event.RejectedSummary
}
