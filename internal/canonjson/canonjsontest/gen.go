// Package canonjsontest draws the strings and payloads that exercise
// canonjson and the encoders built on it (rapid generators).
package canonjsontest

import (
	"bytes"
	"encoding/json"
	"strings"

	"pgregory.net/rapid"
)

// Pieces of strings: plain ASCII, what encoding/json escapes or
// HTML-escapes, multi-byte UTF-8, U+2028/U+2029 and invalid UTF-8.
var stringPieces = []string{"a", "Z", "0", " ", ".", "-", "/", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f",
	"é", "→", "\u2028", "\u2029", "😀", "\xff", "\xe2\x80", "\xe2\x80\xa8"}

// String draws strings: mostly plain ASCII, else pieces of what
// encoding/json escapes, multi-byte UTF-8 and invalid UTF-8.
func String() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		if rapid.IntRange(0, 3).Draw(t, "plain") > 0 {
			return rapid.StringMatching(`[a-z0-9.\-]{0,12}`).Draw(t, "s")
		}
		return strings.Join(rapid.SliceOfN(rapid.SampledFrom(stringPieces), 0, 8).Draw(t, "pieces"), "")
	})
}

// Value draws a value of what JSON holds, depth levels deep at most.
func Value(depth int) *rapid.Generator[any] {
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
			return String().Draw(t, "string")
		case 5:
			return rapid.SliceOfN(Value(depth-1), 0, 4).Draw(t, "array")
		default:
			return rapid.MapOfN(String(), Value(depth-1), 0, 4).Draw(t, "object")
		}
	})
}

// Data draws payloads: none, what Marshal writes, the same indented or
// cut short or with one byte changed, and token soup.
func Data() *rapid.Generator[json.RawMessage] {
	return rapid.Custom(func(t *rapid.T) json.RawMessage {
		v, _ := json.Marshal(Value(3).Draw(t, "value"))
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

// SameAsMarshal fails t unless got is "prefix" followed by what
// json.Marshal(v) writes — or both failed (gerr is the encoder's error) —
// and reports whether there were bytes to compare: how a test holds an
// encoder that appends to "prefix" to encoding/json.
func SameAsMarshal(t *rapid.T, v any, got []byte, gerr error) bool {
	want, werr := json.Marshal(v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("Marshal error %v, encoder error %v", werr, gerr)
	}
	if werr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("the encoder wrote\n%s\nMarshal wrote\n%s", got, want)
	}
	return werr == nil
}
