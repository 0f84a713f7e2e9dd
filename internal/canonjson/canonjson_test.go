package canonjson_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/internal/canonjson"
	"github.com/agentic-dev/agentic/internal/canonjson/canonjsontest"
	"pgregory.net/rapid"
)

// checkCanonical fails when Canonical accepts d but d is not valid
// JSON that Marshal reproduces, or when it refuses a valid d that is.
func checkCanonical(t interface{ Fatalf(string, ...any) }, d []byte) {
	marshalled, err := json.Marshal(json.RawMessage(d))
	same := err == nil && bytes.Equal(marshalled, d) && json.Valid(d)
	if got := canonjson.Canonical(d); got != same {
		t.Fatalf("canonjson.Canonical(%q) = %v; Marshal gives %q (%v)", d, got, marshalled, err)
	}
	if canonjson.Valid(d) != json.Valid(d) {
		t.Fatalf("canonjson.Valid(%q) = %v, json.Valid %v", d, canonjson.Valid(d), json.Valid(d))
	}
}

// TestCanonical: Canonical accepts exactly the payloads Marshal
// leaves as they are (nesting within MaxDepth).
func TestCanonical(t *testing.T) {
	for _, d := range []string{``, `{}`, `[]`, `""`, `0`, `-0`, `01`, `1.`, `.5`, `1.5e+3`, `1E-7`, `-`, `1e`, `tru`, `true`, `null`, `nulll`,
		`{"a":1}`, `{"a":1,}`, `{"a" :1}`, ` {}`, `{} `, `[1,2]`, `[1,]`, `[,]`, `{"a"}`, `{1:2}`, `"\u00e9"`, `"\u00G9"`, `"\x"`, `"\/"`,
		`"a<b"`, `"a&b"`, "\"\u2028\"", "\"\xe2\x80\"", "\"\xff\"", "\"\t\"", `"abc`, `"\`, `["a",{"b":[null,true,false]}]`,
		strings.Repeat("[", canonjson.MaxDepth) + strings.Repeat("]", canonjson.MaxDepth),
		strings.Repeat("[", canonjson.MaxDepth+1) + strings.Repeat("]", canonjson.MaxDepth+1)} {
		d := []byte(d)
		if len(d) > 0 && bytes.Count(d, []byte("[")) > canonjson.MaxDepth {
			if canonjson.Canonical(d) {
				t.Fatalf("Canonical accepted nesting deeper than %d", canonjson.MaxDepth)
			}
			continue
		}
		checkCanonical(t, d)
	}
	rapid.Check(t, func(t *rapid.T) {
		checkCanonical(t, canonjsontest.Data().Draw(t, "data"))
		v, err := json.Marshal(canonjsontest.Value(3).Draw(t, "value"))
		if err == nil && !canonjson.Canonical(v) {
			t.Fatalf("canonicalJSON refuses what Marshal wrote: %s", v)
		}
	})
}

// FuzzCanonical: go test -fuzz FuzzCanonical ./internal/canonjson/
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"step":"s1","attempt":1,"node":"n1"}`, `[1,-2.5e3,"x\u00e9\n",true,null]`, `{"a":{"b":[]}}`, "\"\u2028\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if bytes.Count(d, []byte("["))+bytes.Count(d, []byte("{")) > canonjson.MaxDepth {
			return
		}
		checkCanonical(t, d)
	})
}
