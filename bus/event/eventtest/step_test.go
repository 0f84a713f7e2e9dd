package eventtest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestFullStepSetsEveryField: FullStep's JSON has every field of
// event.Step, and its branches and tests every field of theirs.
func TestFullStepSetsEveryField(t *testing.T) {
	b, err := json.Marshal(FullStep())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range StepFields() {
		if _, ok := m[f]; !ok {
			t.Errorf("FullStep leaves %q out: %s", f, b)
		}
	}
	s := FullStep()
	if !reflect.DeepEqual(JSONFields(reflect.TypeFor[event.Branch]()), []string{"on", "to"}) || s.Next[0].To != "to" {
		t.Errorf("branches: %+v", s.Next)
	}
	if !slices.Contains(StepFields(), "run") || s.Run != "run" || s.Timeout == 0 || len(s.Env) != 1 {
		t.Errorf("FullStep %+v", s)
	}
}
