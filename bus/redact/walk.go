package redact

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is the nesting encoding/json accepts: a document nested deeper
// is not JSON to it, so it is judged as text.
const maxDepth = 10000

// walker reads a JSON document once, in document order, checking it as
// encoding/json's decoder into an `any` would, and judges each text that
// the tree walk (findValue) judges: every string value, a member "k": "v"
// as k=v, the key of a member whose value is not a string alone. It keeps
// no tree and allocates only when a string must be decoded (escapes,
// malformed UTF-8) into its reused buffers.
//
// Document order with every duplicate member judged is a superset of what
// the tree walk judges (sorted keys, the last of duplicates), by the same
// decoded texts: when the walker finds nothing and the document is valid,
// the tree walk finds nothing either. When it finds a candidate, or the
// data is not what json.Unmarshal accepts, the caller asks the tree walk,
// which says which secret is first and where.
type walker struct {
	data      []byte
	pos       int
	depth     int
	set       Set
	withKnown bool
	// judge, when false, only checks the document.
	judge bool
	// lenientNumbers takes a number that overflows a float64 (json.Valid
	// does), noting it in overflow, instead of refusing the document
	// (json.Unmarshal into an `any` does).
	lenientNumbers, overflow bool
	// emptyKeyString is set by a member "": "v", malformedUTF8 by a
	// string without escapes that is not UTF-8: texts RedactJSON judges
	// otherwise (v alone, the bytes as they are).
	emptyKeyString, malformedUTF8 bool
	// stop is set by the first text that holds a candidate secret or the
	// first byte that makes the data something else than JSON.
	stop, found bool
	// key and text are scratch buffers: a decoded key, the text judged.
	key, text []byte
}

// walkClean reports whether data is a JSON document that json.Unmarshal
// into an `any` accepts and in which no text the tree walk would judge
// holds a secret by set (and the known values, withKnown). False means
// "ask the tree walk", not "holds a secret".
func (set Set) walkClean(data []byte, withKnown bool) bool {
	w := set.walk(data, withKnown)
	return !w.stop
}

// walk judges data with the reused buffers and returns the walker as it
// ended.
func (set Set) walk(data []byte, withKnown bool) walker {
	bufs := scratch.Get().(*walkBuffers)
	w := walker{data: data, set: set, withKnown: withKnown, judge: true, key: bufs.key[:0], text: bufs.text[:0]}
	w.document()
	if cap(w.key)+cap(w.text) <= maxScratch {
		bufs.key, bufs.text = w.key, w.text
		scratch.Put(bufs)
	}
	w.key, w.text = nil, nil
	return w
}

// walkBuffers are a walker's scratch buffers, reused across documents up
// to maxScratch bytes.
type walkBuffers struct{ key, text []byte }

const maxScratch = 64 << 10

var scratch = sync.Pool{New: func() any { return new(walkBuffers) }}

func (w *walker) document() {
	w.value()
	if w.stop {
		return
	}
	w.space()
	if w.pos != len(w.data) {
		w.stop = true
	}
}

func (w *walker) fail() { w.stop = true }

// space skips JSON white space.
func (w *walker) space() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value reads one value after optional white space; a string value met
// here (an array element, the document itself) is judged alone.
func (w *walker) value() {
	w.space()
	if w.pos >= len(w.data) {
		w.fail()
		return
	}
	switch c := w.data[w.pos]; {
	case c == '{':
		w.object()
	case c == '[':
		w.array()
	case c == '"':
		lo, hi, raw := w.str()
		if w.stop || !w.judge {
			return
		}
		if raw {
			w.check(w.data[lo:hi])
			return
		}
		w.text = appendUnquoted(w.text[:0], w.data[lo:hi])
		w.check(w.text)
	case c == '-' || c >= '0' && c <= '9':
		w.number()
	case c == 't':
		w.literal("true")
	case c == 'f':
		w.literal("false")
	case c == 'n':
		w.literal("null")
	default:
		w.fail()
	}
}

func (w *walker) literal(lit string) {
	if len(w.data)-w.pos < len(lit) || string(w.data[w.pos:w.pos+len(lit)]) != lit {
		w.fail()
		return
	}
	w.pos += len(lit)
}

// enter counts one more level of nesting; false past encoding/json's limit.
func (w *walker) enter() bool {
	w.depth++
	if w.depth > maxDepth {
		w.fail()
		return false
	}
	return true
}

func (w *walker) array() {
	if !w.enter() {
		return
	}
	w.pos++ // [
	w.space()
	if w.pos < len(w.data) && w.data[w.pos] == ']' {
		w.pos++
		w.depth--
		return
	}
	for {
		w.value()
		if w.stop {
			return
		}
		w.space()
		if w.pos >= len(w.data) {
			w.fail()
			return
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case ']':
			w.pos++
			w.depth--
			return
		default:
			w.fail()
			return
		}
	}
}

func (w *walker) object() {
	if !w.enter() {
		return
	}
	w.pos++ // {
	w.space()
	if w.pos < len(w.data) && w.data[w.pos] == '}' {
		w.pos++
		w.depth--
		return
	}
	for {
		w.space()
		if w.pos >= len(w.data) || w.data[w.pos] != '"' {
			w.fail()
			return
		}
		klo, khi, kraw := w.str()
		if w.stop {
			return
		}
		w.space()
		if w.pos >= len(w.data) || w.data[w.pos] != ':' {
			w.fail()
			return
		}
		w.pos++
		w.space()
		if w.pos < len(w.data) && w.data[w.pos] == '"' {
			// "k": "v" is judged as k=v.
			vlo, vhi, vraw := w.str()
			if w.stop {
				return
			}
			w.emptyKeyString = w.emptyKeyString || khi == klo
			if w.judge {
				t := w.appendText(w.text[:0], klo, khi, kraw)
				t = append(t, '=')
				w.text = w.appendText(t, vlo, vhi, vraw)
				if w.check(w.text); w.stop {
					return
				}
			}
		} else {
			// The key alone, then the value.
			if w.judge {
				k := w.data[klo:khi]
				if !kraw {
					w.key = appendUnquoted(w.key[:0], k)
					k = w.key
				}
				if w.check(k); w.stop {
					return
				}
			}
			w.value()
			if w.stop {
				return
			}
		}
		w.space()
		if w.pos >= len(w.data) {
			w.fail()
			return
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case '}':
			w.pos++
			w.depth--
			return
		default:
			w.fail()
			return
		}
	}
}

// check judges text; a candidate secret stops the walk.
func (w *walker) check(text []byte) {
	if len(text) == 0 {
		return
	}
	// The string does not outlive find, which keeps no part of it, and
	// text is not written to while find runs.
	if len(find(unsafe.String(&text[0], len(text)), w.set, w.withKnown, true)) > 0 {
		w.found, w.stop = true, true
	}
}

// appendText appends the decoded string whose quoted content is
// data[lo:hi]: the bytes as they are when raw, else decoded as
// encoding/json decodes a string.
func (w *walker) appendText(b []byte, lo, hi int, raw bool) []byte {
	if raw {
		return append(b, w.data[lo:hi]...)
	}
	return appendUnquoted(b, w.data[lo:hi])
}

// str reads the string at w.pos (its opening quote) and returns the bounds
// of its content and whether the content is its decoded text as it is (no
// escape, valid UTF-8).
func (w *walker) str() (lo, hi int, raw bool) {
	d := w.data
	i := w.pos + 1
	lo, raw = i, true
	high := false
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if high && raw && !utf8.Valid(d[lo:i]) {
				raw, w.malformedUTF8 = false, true
			}
			w.pos = i + 1
			return lo, i, raw
		case c == '\\':
			raw = false
			i++
			if i >= len(d) {
				w.fail()
				return
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(d)-i < 5 || !isHex(d[i+1]) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) {
					w.fail()
					return
				}
				i += 5
			default:
				w.fail()
				return
			}
		case c < ' ':
			w.fail()
			return
		default:
			if c >= utf8.RuneSelf {
				high = true
			}
			i++
		}
	}
	w.fail()
	return
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// number reads a JSON number; one that overflows a float64 is refused, as
// json.Unmarshal into an `any` refuses it.
func (w *walker) number() {
	d := w.data
	start := w.pos
	i := start
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		digits()
	default:
		w.fail()
		return
	}
	intEnd := i
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			w.fail()
			return
		}
	}
	exp := false
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		exp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			w.fail()
			return
		}
	}
	w.pos = i
	// Fewer than 300 integer digits and no exponent cannot pass
	// math.MaxFloat64 (about 1.8e308); anything else is parsed.
	if exp || intEnd-start > 300 {
		if _, err := strconv.ParseFloat(string(d[start:i]), 64); err != nil {
			if w.overflow = true; !w.lenientNumbers {
				w.fail()
			}
		}
	}
}

// appendUnquoted appends the content s of a JSON string (without its
// quotes, escapes checked by the walker) decoded as encoding/json decodes
// it: escapes resolved, a \u surrogate not followed by its pair and
// malformed UTF-8 become U+FFFD.
func appendUnquoted(b, s []byte) []byte {
	b = slices.Grow(b, len(s))
	for r := 0; r < len(s); {
		// The bytes up to the next escape: at once when they are UTF-8,
		// else rune by rune, each malformed byte becoming U+FFFD.
		k := bytes.IndexByte(s[r:], '\\')
		if k < 0 {
			k = len(s) - r
		}
		if chunk := s[r : r+k]; utf8.Valid(chunk) {
			b = append(b, chunk...)
		} else {
			for len(chunk) > 0 {
				rr, size := utf8.DecodeRune(chunk)
				chunk = chunk[size:]
				b = utf8.AppendRune(b, rr)
			}
		}
		r += k
		if r == len(s) {
			break
		}
		r++ // the backslash
		switch s[r] {
		case '"', '\\', '/', '\'':
			b = append(b, s[r])
			r++
		case 'b':
			b = append(b, '\b')
			r++
		case 'f':
			b = append(b, '\f')
			r++
		case 'n':
			b = append(b, '\n')
			r++
		case 'r':
			b = append(b, '\r')
			r++
		case 't':
			b = append(b, '\t')
			r++
		case 'u':
			r--
			rr := getu4(s[r:])
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
					r += 6
					b = utf8.AppendRune(b, dec)
					break
				}
				rr = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
