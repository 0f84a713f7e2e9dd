package ledger

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"pgregory.net/rapid"
)

// Pieces of strings: plain ASCII, what encoding/json escapes or
// HTML-escapes, multi-byte UTF-8, U+2028/U+2029 and invalid UTF-8.
var stringPieces = []string{"a", "Z", "0", " ", ".", "-", "/", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f",
	"é", "→", "\u2028", "\u2029", "😀", "\xff", "\xe2\x80", "\xe2\x80\xa8"}

func stringGen() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		if rapid.IntRange(0, 3).Draw(t, "plain") > 0 {
			return rapid.StringMatching(`[a-z0-9.\-]{0,12}`).Draw(t, "s")
		}
		return strings.Join(rapid.SliceOfN(rapid.SampledFrom(stringPieces), 0, 8).Draw(t, "pieces"), "")
	})
}

// valueGen draws a value of what JSON holds, depth levels deep at most.
func valueGen(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kind := rapid.IntRange(0, 6).Draw(t, "kind")
		if depth == 0 {
			kind %= 5
		}
		switch kind {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.Float64().Draw(t, "float")
		case 3:
			return rapid.Int64().Draw(t, "int")
		case 4:
			return stringGen().Draw(t, "string")
		case 5:
			return rapid.SliceOfN(valueGen(depth-1), 0, 4).Draw(t, "array")
		default:
			return rapid.MapOfN(stringGen(), valueGen(depth-1), 0, 4).Draw(t, "object")
		}
	})
}

// dataGen draws payloads: none, what Marshal writes, the same indented
// or cut short or with one byte changed, and token soup.
func dataGen() *rapid.Generator[json.RawMessage] {
	return rapid.Custom(func(t *rapid.T) json.RawMessage {
		v, _ := json.Marshal(valueGen(3).Draw(t, "value"))
		switch rapid.IntRange(0, 6).Draw(t, "form") {
		case 0:
			return nil
		case 1:
			return json.RawMessage{}
		case 2:
			var b bytes.Buffer
			_ = json.Indent(&b, v, "", " ")
			return b.Bytes()
		case 3:
			return v[:rapid.IntRange(0, len(v)).Draw(t, "cut")]
		case 4:
			i := rapid.IntRange(0, len(v)-1).Draw(t, "at")
			v = bytes.Clone(v)
			v[i] = rapid.SampledFrom([]byte(`{}[]",:0-1.eE+tfn \\u<&`)).Draw(t, "byte")
			return v
		case 5:
			return []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom([]string{"{", "}", "[", "]", `"`, `"a"`, ":", ",", "0", "-", "1.5", "1e9", "01", "true", "nul", "null", " ", "\\u00e9", `\`, "<"}), 0, 12).Draw(t, "soup"), ""))
		}
		return v
	})
}

func timeGen() *rapid.Generator[time.Time] {
	return rapid.Custom(func(t *rapid.T) time.Time {
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			return time.Time{}
		case 1: // outside what RFC 3339 writes: Marshal fails
			return time.Date(rapid.SampledFrom([]int{-1, 10000}).Draw(t, "year"), 1, 1, 0, 0, 0, 0, time.UTC)
		case 2:
			return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "s"), 0).In(time.FixedZone("x", rapid.IntRange(-50000, 50000).Draw(t, "zone")))
		}
		return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "s"), rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).UTC()
	})
}

// TestRecordEncodingIsMarshal: appendRecord writes json.Marshal's bytes
// for every event, and fails where Marshal fails.
func TestRecordEncodingIsMarshal(t *testing.T) {
	// A field added to event.Event must be written by appendRecordFast
	// too: this test then needs it in its generator.
	if n := reflect.TypeFor[event.Event]().NumField(); n != 9 {
		t.Fatalf("event.Event has %d fields; appendRecordFast writes 9", n)
	}
	fast := 0
	rapid.Check(t, func(t *rapid.T) {
		ev := event.Event{
			Seq: rapid.Uint64().Draw(t, "seq"), StreamSeq: rapid.Uint64().Draw(t, "stream"),
			ID: stringGen().Draw(t, "id"), Type: event.Type(stringGen().Draw(t, "type")), Run: stringGen().Draw(t, "run"),
			Node: stringGen().Draw(t, "node"), Time: timeGen().Draw(t, "time"), Subject: stringGen().Draw(t, "subject"),
			Data: dataGen().Draw(t, "data"),
		}
		want, werr := json.Marshal(ev)
		got, gerr := appendRecord([]byte("prefix"), &ev)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Marshal error %v, appendRecord error %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("appendRecord wrote\n%s\nMarshal wrote\n%s", got, want)
		}
		if _, ok := appendRecordFast(nil, &ev); ok {
			fast++
		}
	})
	if fast == 0 {
		t.Fatal("no event took the fast path")
	}
}

// checkCanonical fails when canonicalJSON accepts d but d is not valid
// JSON that Marshal reproduces, or when it refuses a valid d that is.
func checkCanonical(t interface{ Fatalf(string, ...any) }, d []byte) {
	marshalled, err := json.Marshal(json.RawMessage(d))
	same := err == nil && bytes.Equal(marshalled, d) && json.Valid(d)
	if got := canonicalJSON(d); got != same {
		t.Fatalf("canonicalJSON(%q) = %v; Marshal gives %q (%v)", d, got, marshalled, err)
	}
	if validJSON(d) != json.Valid(d) {
		t.Fatalf("validJSON(%q) = %v, json.Valid %v", d, validJSON(d), json.Valid(d))
	}
}

// TestCanonicalJSON: canonicalJSON accepts exactly the payloads Marshal
// leaves as they are (nesting within maxCanonicalDepth).
func TestCanonicalJSON(t *testing.T) {
	for _, d := range []string{``, `{}`, `[]`, `""`, `0`, `-0`, `01`, `1.`, `.5`, `1.5e+3`, `1E-7`, `-`, `1e`, `tru`, `true`, `null`, `nulll`,
		`{"a":1}`, `{"a":1,}`, `{"a" :1}`, ` {}`, `{} `, `[1,2]`, `[1,]`, `[,]`, `{"a"}`, `{1:2}`, `"\u00e9"`, `"\u00G9"`, `"\x"`, `"\/"`,
		`"a<b"`, `"a&b"`, "\"\u2028\"", "\"\xe2\x80\"", "\"\xff\"", "\"\t\"", `"abc`, `"\`, `["a",{"b":[null,true,false]}]`,
		strings.Repeat("[", maxCanonicalDepth) + strings.Repeat("]", maxCanonicalDepth),
		strings.Repeat("[", maxCanonicalDepth+1) + strings.Repeat("]", maxCanonicalDepth+1)} {
		d := []byte(d)
		if len(d) > 0 && bytes.Count(d, []byte("[")) > maxCanonicalDepth {
			if canonicalJSON(d) {
				t.Fatalf("canonicalJSON accepted nesting deeper than %d", maxCanonicalDepth)
			}
			continue
		}
		checkCanonical(t, d)
	}
	rapid.Check(t, func(t *rapid.T) {
		checkCanonical(t, dataGen().Draw(t, "data"))
		v, err := json.Marshal(valueGen(3).Draw(t, "value"))
		if err == nil && !canonicalJSON(v) {
			t.Fatalf("canonicalJSON refuses what Marshal wrote: %s", v)
		}
	})
}

// FuzzCanonicalJSON: go test -fuzz FuzzCanonicalJSON ./ledger/
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"step":"s1","attempt":1,"node":"n1"}`, `[1,-2.5e3,"x\u00e9\n",true,null]`, `{"a":{"b":[]}}`, "\"\u2028\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if bytes.Count(d, []byte("["))+bytes.Count(d, []byte("{")) > maxCanonicalDepth {
			return
		}
		checkCanonical(t, d)
	})
}
