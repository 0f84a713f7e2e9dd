package runindex

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// Key layout, relative to the index's key space (see the package doc). A
// position is a run's place in listing order: its created time (stream time
// of its goal.submitted, Unix ns, big-endian) then its id, so that byte
// order is (created, id) order.
const (
	prefixCreated = "c/" // c/<position> → summary JSON
	prefixID      = "r/" // r/<id> → created be64
	prefixStatus  = "s/" // s/<status>\x00<position> → ""
	prefixStep    = "p/" // p/<uvarint len(id)><id><pos be32> → StepView JSON
	prefixGate    = "g/" // g/<position><pos be32> → api.Gate JSON (open gates)
)

// position encodes created and id as a position.
func position(created int64, id string) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(created))
	return append(b, id...)
}

// splitPosition is position's inverse.
func splitPosition(p []byte) (created int64, id string, ok bool) {
	if len(p) <= 8 {
		return 0, "", false
	}
	return int64(binary.BigEndian.Uint64(p)), string(p[8:]), true
}

// createdNanos is a stream time as the index orders it; times before 1970
// (there are none in a stream) count as 1970.
func createdNanos(t time.Time) int64 {
	if t.Before(time.Unix(0, 0)) {
		return 0
	}
	return t.UnixNano()
}

// timeBound is the first position at or after t.
func timeBound(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(createdNanos(t)))
}

func createdKey(pos []byte) []byte { return append([]byte(prefixCreated), pos...) }

func idKey(id string) []byte { return append([]byte(prefixID), id...) }

func statusPrefix(status string) []byte {
	return append(append([]byte(prefixStatus), status...), 0)
}

func statusKey(status string, pos []byte) []byte { return append(statusPrefix(status), pos...) }

// stepPrefix is the prefix of run's step rows. The id is length-prefixed, so
// no run's prefix is a prefix of another's, whatever bytes ids hold.
func stepPrefix(run string) []byte {
	b := binary.AppendUvarint([]byte(prefixStep), uint64(len(run)))
	return append(b, run...)
}

func stepKey(run string, pos int) []byte {
	return binary.BigEndian.AppendUint32(stepPrefix(run), uint32(pos))
}

// gateKey is the key of the open gate of step i of the run at pos: gates
// are listed in the order of their runs' creation, then of the plan.
func gateKey(pos []byte, i int) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(prefixGate), pos...), uint32(i))
}

// prefixEnd is the first key after every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// cursorVersion starts every cursor, so that the encoding can change.
const cursorVersion = 1

// encodeCursor makes the cursor of a position: opaque, URL-safe.
func encodeCursor(pos []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion}, pos...))
}

// maxCursor bounds a cursor's length (a run id is far shorter).
const maxCursor = 1024

// decodeCursor returns the position of a cursor.
func decodeCursor(c string) ([]byte, error) {
	if len(c) > maxCursor {
		return nil, fmt.Errorf("%w: %d characters long", ErrBadCursor, len(c))
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a cursor", ErrBadCursor, c)
	}
	if len(b) == 0 || b[0] != cursorVersion {
		return nil, fmt.Errorf("%w: %q is not a cursor of this version", ErrBadCursor, c)
	}
	if _, _, ok := splitPosition(b[1:]); !ok {
		return nil, fmt.Errorf("%w: %q is too short", ErrBadCursor, c)
	}
	return b[1:], nil
}
