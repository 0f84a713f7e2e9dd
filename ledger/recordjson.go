package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson"
)

// The chain hashes the encoding/json encoding of each record (json.Marshal
// of event.Event): that encoding is the format, on disk and in every
// hash. appendRecord writes the same bytes without reflection for the
// records nearly every event is — ASCII ids, names and subjects, a payload
// already in the form Marshal gives it — and hands any other to
// json.Marshal. The differential tests (recordjson_test.go) hold the two
// to the same bytes.

// appendRecord appends the canonical encoding of ev to dst.
func appendRecord(dst []byte, ev *event.Event) ([]byte, error) {
	if b, ok := appendRecordFast(dst, ev); ok {
		return b, nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return dst, fmt.Errorf("ledger: encode record %d (%s): %w", ev.Seq, ev.ID, err)
	}
	return append(dst, b...), nil
}

// appendRecordFast appends what json.Marshal(ev) gives, or reports false
// (dst unchanged) when ev is not of the shape it writes.
func appendRecordFast(dst []byte, ev *event.Event) ([]byte, bool) {
	if !canonjson.Plain(ev.ID) || !canonjson.Plain(string(ev.Type)) || !canonjson.Plain(ev.Run) ||
		!canonjson.Plain(ev.Node) || !canonjson.Plain(ev.Subject) {
		return dst, false
	}
	if len(ev.Data) > 0 && !canonjson.Canonical(ev.Data) {
		return dst, false
	}
	b := append(dst, `{"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"stream_seq":`...)
	b = strconv.AppendUint(b, ev.StreamSeq, 10)
	b = append(b, `,"id":"`...)
	b = append(b, ev.ID...)
	b = append(b, `","type":"`...)
	b = append(b, ev.Type...)
	b = append(b, '"')
	if ev.Run != "" {
		b = append(b, `,"run":"`...)
		b = append(b, ev.Run...)
		b = append(b, '"')
	}
	b = append(b, `,"node":"`...)
	b = append(b, ev.Node...)
	b = append(b, `","time":"`...)
	// time.Time.MarshalJSON is AppendText (strict RFC 3339) in quotes; it
	// fails for years outside [0, 9999], and so does Marshal.
	b, err := ev.Time.AppendText(b)
	if err != nil {
		return dst, false
	}
	b = append(b, `","subject":"`...)
	b = append(b, ev.Subject...)
	b = append(b, '"')
	if len(ev.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, ev.Data...)
	}
	return append(b, '}'), true
}
