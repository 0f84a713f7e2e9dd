package ledger

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson/canonjsontest"
	"pgregory.net/rapid"
)

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
			ID: canonjsontest.String().Draw(t, "id"), Type: event.Type(canonjsontest.String().Draw(t, "type")), Run: canonjsontest.String().Draw(t, "run"),
			Node: canonjsontest.String().Draw(t, "node"), Time: timeGen().Draw(t, "time"), Subject: canonjsontest.String().Draw(t, "subject"),
			Data: canonjsontest.Data().Draw(t, "data"),
		}
		got, gerr := appendRecord([]byte("prefix"), &ev)
		if !canonjsontest.SameAsMarshal(t, ev, got, gerr) {
			return
		}
		if _, ok := appendRecordFast(nil, &ev); ok {
			fast++
		}
	})
	if fast == 0 {
		t.Fatal("no event took the fast path")
	}
}
