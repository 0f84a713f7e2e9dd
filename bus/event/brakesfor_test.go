package event_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// The run brakes a ui node signs for an operator are the ui role's from
// protocol version 7, an operator's own credential may not sign them, and
// version 6 has no place for them (its ledgers refuse a ui node's event in
// the run category).
func TestRunBrakesForAreTheUINodes(t *testing.T) {
	ui, op := []string{event.RoleUI}, []string{event.RoleOperator}
	for _, typ := range []event.Type{event.RunPausedFor, event.RunResumedFor, event.RunCancelRequestedFor} {
		s, ok := event.Lookup(event.TypesAt(7), typ)
		if !ok || s.Since != 7 || !s.Permits(ui) || s.Permits(op) {
			t.Errorf("%s under version 7: %+v %v, want the ui role's alone, since 7", typ, s, ok)
		}
		if _, ok := event.Lookup(event.TypesAt(6), typ); ok {
			t.Errorf("%s is in version 6's table", typ)
		}
		if typ.Category() != "run" {
			t.Errorf("%s: category %q", typ, typ.Category())
		}
	}
	if event.MayPublish(event.TypesAt(6), "run", ui) {
		t.Error("version 6 lets a ui node publish in the run category")
	}
	if !event.MayPublish(event.TypesAt(7), "run", ui) {
		t.Error("version 7 does not let a ui node publish in the run category")
	}
}
