package cli

import (
	"fmt"
	"testing"
)

// TestDepsCellBounded: a step after a wide fan-out lists five of its
// dependencies and counts the rest, so its table line stays short.
func TestDepsCellBounded(t *testing.T) {
	var ids []string
	for i := range 3000 {
		ids = append(ids, fmt.Sprintf("s%d", i))
	}
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{nil, "-"},
		{ids[:2], "s0,s1"},
		{ids[:5], "s0,s1,s2,s3,s4"},
		{ids, "s0,s1,s2,s3,s4,… (+2995 more)"},
	} {
		if got := depsCell(c.ids); got != c.want {
			t.Errorf("depsCell(%d ids) = %q, want %q", len(c.ids), got, c.want)
		}
	}
}
