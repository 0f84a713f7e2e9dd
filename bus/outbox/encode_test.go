package outbox

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson/canonjsontest"
	"pgregory.net/rapid"
)

// TestStoredEncodingIsMarshal: appendStored writes json.Marshal's bytes
// for every draft, and fails where Marshal fails.
func TestStoredEncodingIsMarshal(t *testing.T) {
	// A field added to stored must be written by appendStoredFast too.
	if n := reflect.TypeFor[stored]().NumField(); n != 6 {
		t.Fatalf("stored has %d fields; appendStoredFast writes 6", n)
	}
	fast := 0
	rapid.Check(t, func(t *rapid.T) {
		tm := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "s"), rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).UTC()
		switch rapid.IntRange(0, 4).Draw(t, "time kind") {
		case 0:
			tm = time.Time{}
		case 1:
			tm = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // Marshal fails
		case 2:
			tm = tm.In(time.FixedZone("x", 3600))
		}
		d := event.Draft{ID: canonjsontest.String().Draw(t, "id"), Type: event.Type(canonjsontest.String().Draw(t, "type")),
			Run: canonjsontest.String().Draw(t, "run"), Target: canonjsontest.String().Draw(t, "target"),
			Time: tm, Data: canonjsontest.Data().Draw(t, "data")}
		got, gerr := appendStored([]byte("prefix"), &d)
		if !canonjsontest.SameAsMarshal(t, stored(d), got, gerr) {
			return
		}
		if _, ok := appendStoredFast(nil, &d); ok {
			fast++
		}
	})
	if fast == 0 {
		t.Fatal("no draft took the fast path")
	}
}
