package envelope

import (
	"bytes"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// The header and claims this package writes are compact JSON of known
// members in a known form. parseHeader and parseClaims read that form
// without reflection; on anything else — white space, an unknown,
// repeated or differently cased member, a null, an escape in a member's
// string, a fraction, a nesting deeper than maxFastDepth — they give up
// and parse falls back to encoding/json. What they accept they decode as
// encoding/json does, so a verdict never depends on which one read a
// message.

// maxFastDepth bounds the nesting of a payload the fast path reads;
// deeper ones are left to encoding/json (and its own limit).
const maxFastDepth = 64

// reader reads compact JSON from b.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) next(c byte) bool {
	if r.pos < len(r.b) && r.b[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

func (r *reader) peek() byte {
	if r.pos < len(r.b) {
		return r.b[r.pos]
	}
	return 0
}

// plainString reads a string without escapes whose bytes are UTF-8 (what
// encoding/json decodes to the bytes as they are) and returns its
// content.
func (r *reader) plainString() ([]byte, bool) {
	if !r.next('"') {
		return nil, false
	}
	start := r.pos
	ascii := true
	for r.pos < len(r.b) {
		c := r.b[r.pos]
		switch {
		case c == '"':
			s := r.b[start:r.pos]
			r.pos++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < ' ':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		r.pos++
	}
	return nil, false
}

// key reads a member name (a plain string) and its colon.
func (r *reader) key() ([]byte, bool) {
	k, ok := r.plainString()
	return k, ok && r.next(':')
}

// integer reads an integer of at most 15 digits (exact in a float64).
func (r *reader) integer() (int64, bool) {
	neg := r.next('-')
	start := r.pos
	var n int64
	for r.pos < len(r.b) && r.b[r.pos] >= '0' && r.b[r.pos] <= '9' {
		n = n*10 + int64(r.b[r.pos]-'0')
		r.pos++
	}
	digits := r.pos - start
	if digits == 0 || digits > 15 || digits > 1 && r.b[start] == '0' {
		return 0, false
	}
	switch r.peek() {
	case '.', 'e', 'E':
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// date reads a NumericDate as numericDate.UnmarshalJSON does for an
// integer.
func (r *reader) date() (*numericDate, bool) {
	n, ok := r.integer()
	if !ok {
		return nil, false
	}
	return &numericDate{time.Unix(n, 0).UTC()}, true
}

// time reads a quoted time as time.Time.UnmarshalJSON does.
func (r *reader) time() (time.Time, bool) {
	start := r.pos
	if _, ok := r.plainString(); !ok {
		return time.Time{}, false
	}
	var t time.Time
	if t.UnmarshalJSON(r.b[start:r.pos]) != nil {
		return time.Time{}, false
	}
	return t, true
}

// raw reads any JSON value and returns a copy of its bytes, as
// json.RawMessage's UnmarshalJSON keeps them.
func (r *reader) raw() ([]byte, bool) {
	start := r.pos
	if !r.value(0) {
		return nil, false
	}
	return append([]byte(nil), r.b[start:r.pos]...), true
}

// value checks one compact JSON value.
func (r *reader) value(depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	switch c := r.peek(); {
	case c == '{':
		r.pos++
		if r.next('}') {
			return true
		}
		for {
			if !r.str() || !r.next(':') || !r.value(depth+1) {
				return false
			}
			if r.next('}') {
				return true
			}
			if !r.next(',') {
				return false
			}
		}
	case c == '[':
		r.pos++
		if r.next(']') {
			return true
		}
		for {
			if !r.value(depth + 1) {
				return false
			}
			if r.next(']') {
				return true
			}
			if !r.next(',') {
				return false
			}
		}
	case c == '"':
		return r.str()
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	}
	return false
}

// str checks a JSON string, escapes included.
func (r *reader) str() bool {
	if !r.next('"') {
		return false
	}
	for r.pos < len(r.b) {
		c := r.b[r.pos]
		r.pos++
		switch {
		case c == '"':
			return true
		case c < ' ':
			return false
		case c == '\\':
			if r.pos >= len(r.b) {
				return false
			}
			e := r.b[r.pos]
			r.pos++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(r.b)-r.pos < 4 {
					return false
				}
				for _, h := range r.b[r.pos : r.pos+4] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				r.pos += 4
			default:
				return false
			}
		}
	}
	return false
}

// number checks a JSON number.
func (r *reader) number() bool {
	r.next('-')
	switch c := r.peek(); {
	case c == '0':
		r.pos++
	case c >= '1' && c <= '9':
		r.digits()
	default:
		return false
	}
	if r.next('.') && r.digits() == 0 {
		return false
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.pos++
		if c := r.peek(); c == '+' || c == '-' {
			r.pos++
		}
		if r.digits() == 0 {
			return false
		}
	}
	return true
}

func (r *reader) digits() int {
	start := r.pos
	for r.pos < len(r.b) && r.b[r.pos] >= '0' && r.b[r.pos] <= '9' {
		r.pos++
	}
	return r.pos - start
}

func (r *reader) literal(lit string) bool {
	if len(r.b)-r.pos < len(lit) || string(r.b[r.pos:r.pos+len(lit)]) != lit {
		return false
	}
	r.pos += len(lit)
	return true
}

// members reads an object whose members member reads (by name, each at
// most once: a repeated name gives up), and nothing after it when whole.
func (r *reader) members(whole bool, member func(name []byte) bool) bool {
	if !r.next('{') {
		return false
	}
	if !r.next('}') {
		var seen [16][]byte
		for n := 0; ; n++ {
			name, ok := r.key()
			if !ok || n == len(seen) || slices.ContainsFunc(seen[:n], func(s []byte) bool { return bytes.Equal(s, name) }) || !member(name) {
				return false
			}
			seen[n] = name
			if r.next('}') {
				break
			}
			if !r.next(',') {
				return false
			}
		}
	}
	return !whole || r.pos == len(r.b)
}

// str reads a plain string into *dst.
func (r *reader) strInto(dst *string) bool {
	s, ok := r.plainString()
	if ok {
		*dst = string(s)
	}
	return ok
}

// parseHeader reads a header as json.Unmarshal into a header does, when
// it is in the form this package writes.
func parseHeader(b []byte) (header, bool) {
	var h header
	r := reader{b: b}
	ok := r.members(true, func(name []byte) bool {
		switch string(name) {
		case "alg":
			return r.strInto(&h.Alg)
		case "typ":
			return r.strInto(&h.Typ)
		case "kid":
			return r.strInto(&h.Kid)
		case "cred":
			return r.strInto(&h.Cred)
		}
		return false
	})
	return h, ok
}

// parseClaims reads claims as json.Unmarshal into claims does, when they
// are in the form this package writes.
func parseClaims(b []byte) (claims, bool) {
	var c claims
	r := reader{b: b}
	ok := r.members(true, func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "iss":
			return r.strInto(&c.Issuer)
		case "iat":
			c.IssuedAt, ok = r.date()
		case "exp":
			c.ExpiresAt, ok = r.date()
		case "nbf":
			c.NotBefore, ok = r.date()
		case "jti":
			return r.strInto(&c.ID)
		case "pv":
			var n int64
			n, ok = r.integer()
			c.Version = int(n)
		case "typ":
			var s string
			ok = r.strInto(&s)
			c.Type = event.Type(s)
		case "run":
			return r.strInto(&c.Run)
		case "at":
			c.At, ok = r.time()
		case "data":
			c.Data, ok = r.raw()
		case "batch":
			c.Batch, ok = r.batch()
		}
		return ok
	})
	return c, ok
}

// batch reads a non-empty array of items.
func (r *reader) batch() ([]item, bool) {
	if !r.next('[') {
		return nil, false
	}
	var out []item
	for {
		var it item
		ok := r.members(false, func(name []byte) bool {
			var ok bool
			switch string(name) {
			case "id":
				return r.strInto(&it.ID)
			case "run":
				return r.strInto(&it.Run)
			case "at":
				it.At, ok = r.time()
			case "data":
				it.Data, ok = r.raw()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		out = append(out, it)
		if r.next(']') {
			return out, true
		}
		if !r.next(',') {
			return nil, false
		}
	}
}
