// Package canonjson checks and writes JSON exactly as encoding/json does,
// without reflection, on the hot paths that store or hash what
// json.Marshal would write (ledger records, outbox entries): Canonical
// tells a payload Marshal leaves as it is, Plain a string it writes
// as is. Callers write the values that pass and hand any other to
// encoding/json, so the bytes never depend on which path wrote them.
package canonjson

import "encoding/json"

// Plain reports whether encoding/json writes s as its bytes between
// quotes: printable ASCII that it neither escapes nor HTML-escapes.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// MaxDepth bounds the nesting Canonical follows: it reports false for
// deeper values (none in practice).
const MaxDepth = 256

// Canonical reports whether data is one valid JSON value that
// json.Marshal reproduces byte for byte when it encodes it as a
// json.RawMessage: compact (no whitespace outside strings) and free of
// what Marshal escapes (<, >, &, U+2028, U+2029). False means "not known
// to be": the caller falls back to encoding/json.
func Canonical(data []byte) bool {
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
		if depth >= MaxDepth {
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
		if depth >= MaxDepth {
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

// Valid is json.Valid, answered without encoding/json's scanner for the
// canonical values (Canonical) nearly every event carries.
func Valid(data []byte) bool {
	return Canonical(data) || json.Valid(data)
}
