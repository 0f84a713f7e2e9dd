package event_test

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestParseTraceParent(t *testing.T) {
	tr, sp, fl, err := event.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil || tr[0] != 0x4b || tr[15] != 0x36 || sp[0] != 0x00 || sp[7] != 0xb7 || fl != 1 {
		t.Fatalf("= %x %x %x %v", tr, sp, fl, err)
	}
	for _, bad := range []string{
		"", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
	} {
		if _, _, _, err := event.ParseTraceParent(bad); err == nil || !strings.Contains(err.Error(), "W3C") {
			t.Errorf("ParseTraceParent(%q) = %v", bad, err)
		}
	}
}

func TestRunRatedValidate(t *testing.T) {
	for _, c := range []struct {
		d  event.RunRatedData
		ok bool
	}{
		{event.RunRatedData{Rating: event.RatingUp}, true},
		{event.RunRatedData{Rating: event.RatingDown, Reason: strings.Repeat("x", event.MaxRatingReason)}, true},
		{event.RunRatedData{Rating: "sideways"}, false},
		{event.RunRatedData{}, false},
		{event.RunRatedData{Rating: event.RatingDown, Reason: strings.Repeat("x", event.MaxRatingReason+1)}, false},
	} {
		if err := c.d.Validate(); (err == nil) != c.ok {
			t.Errorf("Validate(%+v) = %v", c.d.Rating, err)
		}
	}
	if s, ok := event.Lookup(event.TypesAt(8), event.RunRated); !ok || s.Since != 8 || !s.Permits([]string{event.RoleOperator}) || s.Permits([]string{event.RoleUI}) {
		t.Fatalf("run.rated row = %+v", s)
	}
}
