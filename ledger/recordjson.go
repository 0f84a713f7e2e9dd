package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentic-dev/agentic/bus/event"
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
	if !plainString(ev.ID) || !plainString(string(ev.Type)) || !plainString(ev.Run) ||
		!plainString(ev.Node) || !plainString(ev.Subject) {
		return dst, false
	}
	if len(ev.Data) > 0 && !canonicalJSON(ev.Data) {
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

// plainString reports whether encoding/json writes s as its bytes between
// quotes: printable ASCII that it neither escapes nor HTML-escapes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// maxCanonicalDepth bounds the nesting canonicalJSON follows; deeper
// payloads (none in practice) go to encoding/json.
const maxCanonicalDepth = 256

// canonicalJSON reports whether data is one valid JSON value that
// json.Marshal reproduces byte for byte when it encodes it as a
// json.RawMessage: compact (no whitespace outside strings) and free of
// what Marshal escapes (<, >, &, U+2028, U+2029). False means "not known
// to be": the caller falls back to encoding/json.
func canonicalJSON(data []byte) bool {
	i, ok := scanValue(data, 0, 0)
	return ok && i == len(data)
}

// scanValue scans the value at d[i:] and returns the index after it.
func scanValue(d []byte, i, depth int) (int, bool) {
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '{':
		if depth >= maxCanonicalDepth {
			return i, false
		}
		i++
		if i < len(d) && d[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(d) || d[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = scanString(d, i); !ok {
				return i, false
			}
			if i >= len(d) || d[i] != ':' {
				return i, false
			}
			if i, ok = scanValue(d, i+1, depth+1); !ok || i >= len(d) {
				return i, false
			}
			switch d[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxCanonicalDepth {
			return i, false
		}
		i++
		if i < len(d) && d[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = scanValue(d, i, depth+1); !ok || i >= len(d) {
				return i, false
			}
			switch d[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return scanString(d, i)
	case c == '-' || isDigit(c):
		return scanNumber(d, i)
	case c == 't':
		return scanLiteral(d, i, "true")
	case c == 'f':
		return scanLiteral(d, i, "false")
	case c == 'n':
		return scanLiteral(d, i, "null")
	}
	return i, false
}

// scanString scans the string starting at d[i] == '"'.
func scanString(d []byte, i int) (int, bool) {
	for i++; i < len(d); i++ {
		switch c := d[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			i++
			if i >= len(d) {
				return i, false
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(d) || !isHex(d[i+1]) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		case c < 0x20, c == '<', c == '>', c == '&':
			return i, false
		case c == 0xE2 && i+2 < len(d) && d[i+1] == 0x80 && d[i+2]&^1 == 0xA8: // U+2028, U+2029
			return i, false
		}
	}
	return i, false
}

// scanNumber scans the number starting at d[i] ('-' or a digit).
func scanNumber(d []byte, i int) (int, bool) {
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return i, false
	case d[i] == '0':
		i++
	case isDigit(d[i]):
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return i, false
		}
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return i, false
		}
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	return i, true
}

func scanLiteral(d []byte, i int, lit string) (int, bool) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// validJSON is json.Valid, answered without encoding/json's scanner for
// the canonical payloads nearly every event carries.
func validJSON(data []byte) bool {
	return canonicalJSON(data) || json.Valid(data)
}
