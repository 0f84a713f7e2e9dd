package envelope

import (
	"bytes"
	"strconv"
	"time"
)

// appendHeader and appendClaims write what json.Marshal writes for a
// header and claims whose strings need no escaping and whose payloads
// are compact JSON without characters it escapes (<, >, &, U+2028,
// U+2029) — the messages this package signs — without reflection or a
// second pass over the payloads. On anything else they give up (false)
// and encode falls back to json.Marshal: the bytes signed are the same
// either way.

// plainJSON reports whether json.Marshal writes s as "s": printable
// ASCII other than ", \, <, > and &.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendPlain(b []byte, name, s string) ([]byte, bool) {
	if !plainJSON(s) {
		return b, false
	}
	b = append(b, name...)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// compactPayload reports whether json.Marshal of data as a
// json.RawMessage writes data as it is: compact JSON, nothing it
// escapes.
func compactPayload(data []byte) bool {
	r := reader{b: data}
	if !r.value(0) || r.pos != len(data) || bytes.ContainsAny(data, "<>&") {
		return false
	}
	for i := bytes.IndexByte(data, 0xE2); i >= 0; {
		if i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8 {
			return false
		}
		k := bytes.IndexByte(data[i+1:], 0xE2)
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return true
}

func appendPayload(b []byte, name string, data []byte) ([]byte, bool) {
	if !compactPayload(data) {
		return b, false
	}
	b = append(b, name...)
	return append(b, data...), true
}

func appendTime(b []byte, name string, t time.Time) ([]byte, bool) {
	tb, err := t.MarshalJSON()
	if err != nil {
		return b, false
	}
	b = append(b, name...)
	return append(b, tb...), true
}

func appendDate(b []byte, name string, d *numericDate) []byte {
	b = append(b, name...)
	return strconv.AppendInt(b, d.Unix(), 10)
}

// appendHeader appends h as json.Marshal writes it, or gives up.
func appendHeader(b []byte, h header) ([]byte, bool) {
	b, ok := appendPlain(append(b, '{'), `"alg":`, h.Alg)
	for _, f := range []struct{ name, s string }{{`,"typ":`, h.Typ}, {`,"kid":`, h.Kid}, {`,"cred":`, h.Cred}} {
		if ok && f.s != "" {
			b, ok = appendPlain(b, f.name, f.s)
		}
	}
	return append(b, '}'), ok
}

// appendClaims appends c as json.Marshal writes it, or gives up.
func appendClaims(b []byte, c claims) ([]byte, bool) {
	b = append(b, '{')
	start := len(b)
	// sep is the comma before a member other than the first.
	sep := func(name string) string {
		if len(b) == start {
			return name[1:]
		}
		return name
	}
	ok := true
	if c.Issuer != "" {
		b, ok = appendPlain(b, sep(`,"iss":`), c.Issuer)
	}
	if c.IssuedAt != nil {
		b = appendDate(b, sep(`,"iat":`), c.IssuedAt)
	}
	if c.ExpiresAt != nil {
		b = appendDate(b, sep(`,"exp":`), c.ExpiresAt)
	}
	if c.NotBefore != nil {
		b = appendDate(b, sep(`,"nbf":`), c.NotBefore)
	}
	if ok && c.ID != "" {
		b, ok = appendPlain(b, sep(`,"jti":`), c.ID)
	}
	if c.Version != 0 {
		b = strconv.AppendInt(append(b, sep(`,"pv":`)...), int64(c.Version), 10)
	}
	if ok {
		b, ok = appendPlain(b, sep(`,"typ":`), string(c.Type))
	}
	if ok && c.Run != "" {
		b, ok = appendPlain(b, `,"run":`, c.Run)
	}
	if ok && !c.At.IsZero() {
		b, ok = appendTime(b, `,"at":`, c.At)
	}
	if ok && len(c.Data) > 0 {
		b, ok = appendPayload(b, `,"data":`, c.Data)
	}
	if ok && len(c.Batch) > 0 {
		b = append(b, `,"batch":[`...)
		for i, it := range c.Batch {
			if i > 0 {
				b = append(b, ',')
			}
			b, ok = appendPlain(append(b, '{'), `"id":`, it.ID)
			if ok && it.Run != "" {
				b, ok = appendPlain(b, `,"run":`, it.Run)
			}
			if ok {
				b, ok = appendTime(b, `,"at":`, it.At)
			}
			if ok && len(it.Data) > 0 {
				b, ok = appendPayload(b, `,"data":`, it.Data)
			}
			if !ok {
				return b, false
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), ok
}
