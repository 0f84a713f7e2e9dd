package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// FindJSON is Find for a JSON document (an event payload) by the Latest
// set and the values this process knows: it judges the decoded strings, so
// JSON escaping neither hides a secret nor makes one up ("$PW\n" in a JSON
// string is a reference followed by a newline). A member "KEY": "value" is
// judged as KEY=value, so {"DB_PASSWORD": "x"} is a secret while
// {"DB_PASSWORD": "$DB_PASSWORD"} is not. Data that is not JSON is judged
// as text.
func FindJSON(data []byte) (kind string, ok bool) {
	f, ok := Scan(data)
	return f.Kind, ok
}

// FindJSON is FindJSON by the patterns of set alone: how a receiver judges
// a payload.
func (set Set) FindJSON(data []byte) (kind string, ok bool) {
	f, ok := set.scan(data, false)
	return f.Kind, ok
}

// Finding says where a secret is, never what it is.
type Finding struct {
	// Kind is the rule's name ("GitHub token", "jwt", "known:DB_PASSWORD").
	Kind string
	// Rule is the label id the secret would be redacted with.
	Rule string
	// Path is the JSON path of the string that holds it ("env.DB_PASSWORD",
	// "plan.steps[2].run"); empty for text that is not JSON.
	Path string
}

// Scan is FindJSON saying where: the first secret of data by the Latest
// set and the values this process knows, with its rule and JSON path. The
// signer refuses an event for which it finds one.
func Scan(data []byte) (Finding, bool) { return Latest.scan(data, true) }

// Scan is Scan by the patterns of set alone.
func (set Set) Scan(data []byte) (Finding, bool) { return set.scan(data, false) }

func (set Set) scan(data []byte, withKnown bool) (Finding, bool) {
	if len(data) == 0 {
		return Finding{}, false // what the text "" holds
	}
	// Most payloads hold no secret: one pass over the bytes says so. A
	// candidate, or data json.Unmarshal might refuse, is judged by the
	// tree walk, which names the first secret in its order.
	if set.walkClean(data, withKnown) {
		return Finding{}, false
	}
	return set.scanTree(data, withKnown)
}

// scanTree is scan by a decoded tree: the order in which the first secret
// is chosen (keys sorted, the last of duplicate keys) and the path it is
// reported with.
func (set Set) scanTree(data []byte, withKnown bool) (Finding, bool) {
	// The decoded strings are judged, not the raw bytes: escapes (\n,
	// \u0041) would hide a secret from the patterns, and the lines of a
	// decoded string let each pattern look only at the lines that hold its
	// hints.
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		sp := find(string(data), set, withKnown, true)
		if len(sp) == 0 {
			return Finding{}, false
		}
		return Finding{Kind: sp[0].kind(), Rule: sp[0].id}, true
	}
	return set.findValue(v, "", withKnown)
}

// FindMember is FindJSON's verdict on one JSON member "key": "value" (or an
// environment variable key=value) by the Latest set and the values this
// process knows: it is judged as the text key=value, so DB_PASSWORD=x is a
// secret and DB_PASSWORD=$DB_PASSWORD is not. Checks that run before an
// event is built (a plan's env, its commands, a memory fact) use it to
// refuse what signing would refuse.
func FindMember(key, value string) (kind string, ok bool) {
	sp := find(key+"="+value, Latest, true, true)
	if len(sp) == 0 {
		return "", false
	}
	return sp[0].kind(), true
}

// FindMember is FindMember by the patterns of set alone.
func (set Set) FindMember(key, value string) (kind string, ok bool) {
	return set.Find(key + "=" + value)
}

func (set Set) findValue(v any, path string, withKnown bool) (Finding, bool) {
	switch x := v.(type) {
	case string:
		if sp := find(x, set, withKnown, true); len(sp) > 0 {
			return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
		}
	case []any:
		for i, e := range x {
			if f, ok := set.findValue(e, fmt.Sprintf("%s[%d]", path, i), withKnown); ok {
				return f, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := joinPath(path, k)
			if s, isStr := x[k].(string); isStr {
				if sp := find(k+"="+s, set, withKnown, true); len(sp) > 0 {
					return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: p}, true
				}
				continue
			}
			if sp := find(k, set, withKnown, true); len(sp) > 0 {
				return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
			}
			if f, ok := set.findValue(x[k], p, withKnown); ok {
				return f, true
			}
		}
	}
	return Finding{}, false
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// RedactJSON redacts every string of the JSON document data (an event
// payload) as Redact does, a member "KEY": "value" judged as KEY=value,
// and returns the document with only those strings changed (the rest of
// the bytes as they were) and whether anything was. Empty data is no
// payload; other data that is not JSON is returned unchanged with an
// error.
func RedactJSON(data []byte) ([]byte, bool, error) {
	out, changed, _, err := RedactJSONClean(data)
	return out, changed, err
}

// RedactJSONClean is RedactJSON that also says whether its pass proves
// that Scan finds nothing in the result: clean is true only when nothing
// was redacted and every text Scan would judge was judged here without a
// secret, so that a signer may skip the second pass. False says nothing:
// Scan the result.
func RedactJSONClean(data []byte) (out []byte, changed, clean bool, err error) {
	if len(data) == 0 {
		return data, false, true, nil // no payload
	}
	// Scan's walk judges every text redaction judges, but for a member
	// "": "v" (v alone here) and strings that are not UTF-8 (their bytes
	// as they are here): when it finds nothing in a document without
	// those, nothing is redacted and Scan finds nothing.
	if w := Latest.walk(data, true); !w.stop && !w.emptyKeyString && !w.malformedUTF8 {
		return data, false, true, nil
	}
	// One walk checks the document (json.Valid's grammar) and whether
	// json.Unmarshal into an `any`, which Scan uses, takes it too.
	w := walker{data: data, lenientNumbers: true}
	if w.document(); w.stop {
		return data, false, false, fmt.Errorf("redact: payload is not JSON")
	}
	// clean until a text is judged differently from Scan's tree walk or
	// holds what looks like a secret.
	clean = !w.overflow
	last := 0
	key, isMember := "", false // the member name the next value belongs to
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i)
			raw := data[i+1 : end-1]
			var s string
			if bytes.IndexByte(raw, '\\') >= 0 {
				s = string(appendUnquoted(nil, raw))
			} else {
				s = string(raw)
				// Scan's decoder makes malformed UTF-8 U+FFFD: another text.
				clean = clean && utf8.Valid(raw)
			}
			isKey := nextIs(data, end, ':')
			var red string
			var found bool
			switch {
			case isKey && nextIs(data, afterColon(data, end), '"'):
				red = s // judged with its value, as key=value
			case isKey:
				red, found = redactText(s)
			case key != "":
				red, found = redactMember(key, s, Latest, true)
			default:
				red, found = redactText(s)
				// Scan judges the member "": "v" as the text =v.
				clean = clean && !isMember
			}
			clean = clean && !found
			key, isMember = "", isKey
			if isKey {
				key = s
			}
			if red != s {
				out = append(out, data[last:i]...)
				out = appendString(out, red)
				last, changed = end, true
			}
			i = end - 1
		case '{', '[', ',':
			key, isMember = "", false
		}
	}
	if !changed {
		return data, false, clean, nil
	}
	return append(out, data[last:]...), true, false, nil
}

// redactText is Redact saying whether it found anything.
func redactText(s string) (string, bool) {
	sp := find(s, Latest, true, false)
	return apply(s, sp), len(sp) > 0
}

// RedactMember redacts value judged as key=value (a JSON member, an
// environment variable, a memory fact) by the Latest set and the values
// this process knows: only the value changes.
func RedactMember(key, value string) string {
	red, _ := redactMember(key, value, Latest, true)
	return red
}

// RedactMember redacts value judged as key=value by the patterns of set
// alone: the same on every node of a build (a fold's redaction).
func (set Set) RedactMember(key, value string) string {
	red, _ := redactMember(key, value, set, false)
	return red
}

// redactMember is RedactMember by set, saying whether the text key=value
// holds a secret anywhere, in the key included.
func redactMember(key, value string, set Set, withKnown bool) (string, bool) {
	text := key + "=" + value
	off := len(key) + 1
	var sp []span
	all := find(text, set, withKnown, false)
	for _, x := range all {
		if x.hi <= off {
			continue
		}
		x.lo, x.hi = max(x.lo, off)-off, x.hi-off
		sp = append(sp, x)
	}
	return apply(value, sp), len(all) > 0
}

// stringEnd returns the index after the JSON string starting at data[i].
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// afterColon returns the index after the ':' that follows index i.
func afterColon(data []byte, i int) int {
	for ; i < len(data); i++ {
		if data[i] == ':' {
			return i + 1
		}
	}
	return i
}

// nextIs reports whether the first non-blank byte at or after i is c.
func nextIs(data []byte, i int, c byte) bool {
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return data[i] == c
	}
	return false
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
