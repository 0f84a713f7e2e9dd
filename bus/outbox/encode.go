package outbox

import (
	"encoding/json"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson"
)

// appendStored appends the on-disk form of d — json.Marshal(stored(d)),
// byte for byte — to dst. Drafts of the usual shape (ASCII id, type, run
// and target, a payload as Marshal writes it) are written directly; any
// other goes to encoding/json.
func appendStored(dst []byte, d *event.Draft) ([]byte, error) {
	if b, ok := appendStoredFast(dst, d); ok {
		return b, nil
	}
	v, err := json.Marshal(stored(*d))
	if err != nil {
		return dst, fmt.Errorf("outbox: encode %s: %w", d.ID, err)
	}
	return append(dst, v...), nil
}

// appendStoredFast appends what json.Marshal(stored(*d)) gives, or reports
// false (dst unchanged) when d is not of the shape it writes.
func appendStoredFast(dst []byte, d *event.Draft) ([]byte, bool) {
	if !canonjson.Plain(d.ID) || !canonjson.Plain(string(d.Type)) || !canonjson.Plain(d.Run) || !canonjson.Plain(d.Target) {
		return dst, false
	}
	if len(d.Data) > 0 && !canonjson.Canonical(d.Data) {
		return dst, false
	}
	b := append(dst, `{"id":"`...)
	b = append(b, d.ID...)
	b = append(b, `","type":"`...)
	b = append(b, d.Type...)
	b = append(b, '"')
	if d.Run != "" {
		b = append(b, `,"run":"`...)
		b = append(b, d.Run...)
		b = append(b, '"')
	}
	if d.Target != "" {
		b = append(b, `,"target":"`...)
		b = append(b, d.Target...)
		b = append(b, '"')
	}
	b = append(b, `,"time":"`...)
	// time.Time.MarshalJSON is AppendText in quotes; both fail for years
	// outside [0, 9999].
	b, err := d.Time.AppendText(b)
	if err != nil {
		return dst, false
	}
	b = append(b, '"')
	if len(d.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, d.Data...)
	}
	return append(b, '}'), true
}

// storedSize is about the length of d's on-disk form (exactly, for the
// drafts appendStoredFast writes, unless the time is not UTC).
func storedSize(d *event.Draft) int {
	return len(`{"id":"","type":"","run":"","target":"","time":"2006-01-02T15:04:05.999999999Z","data":}`) +
		len(d.ID) + len(d.Type) + len(d.Run) + len(d.Target) + len(d.Data)
}
