package plan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// FuzzParse: Parse never panics; a plan it accepts validates again, is a
// fixed point of Normalize and survives a JSON round trip; a plan it
// refuses comes with located problems wrapping ErrInvalid.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "testdata/*.json", "../../../examples/*.yaml", "../../../examples/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(filepath.Ext(file), data)
		}
	}
	for _, s := range []string{
		"", "{}", "steps: []", "steps: [{id: a}]", "steps: [{id: a, depends_on: [a]}]",
		`{"mode": "plan", "steps": [{"goal": "g", "commands": ["x"]}]}`,
		"subgoals: [{id: s, depends_on: [t], steps: [{id: a}]}, {id: t, depends_on: s, steps: [{id: b}]}]",
		"steps: [&a {id: x, <<: *a}]", "a: &a [*a]", "steps:\n  - <<: [{run: x}, {id: y}]\n",
	} {
		f.Add(".yaml", []byte(s))
	}
	f.Fuzz(func(t *testing.T, ext string, data []byte) {
		p, err := Parse("fuzz"+ext, data)
		if err != nil {
			var perr *Error
			if p != nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &perr) || len(perr.Problems) == 0 {
				t.Fatalf("bad failure: plan %v, err %T %v", p, err, err)
			}
			return
		}
		if err := Validate(p); err != nil {
			t.Fatalf("parsed plan does not validate: %v\ninput: %q", err, data)
		}
		again := clonePlan(p)
		if err := Normalize(&again); err != nil {
			t.Fatalf("Normalize of a parsed plan: %v", err)
		}
		if !reflect.DeepEqual(*p, again) {
			t.Fatalf("Normalize changed a parsed plan:\n%+v\n%+v", p, again)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back event.Plan
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := Validate(&back); err != nil {
			t.Fatalf("JSON round trip does not validate: %v", err)
		}
		if !reflect.DeepEqual(*p, back) {
			t.Fatalf("JSON round trip changed the plan:\n%+v\n%+v", p, back)
		}
	})
}
