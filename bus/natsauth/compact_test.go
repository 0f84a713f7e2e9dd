package natsauth

import (
	"slices"
	"testing"
)

// TestDedupLeavesOutCoveredSubjects: a subject another of the list
// covers is left out; one that is only partly covered stays.
func TestDedupLeavesOutCoveredSubjects(t *testing.T) {
	for _, c := range []struct {
		in, want []string
	}{
		{[]string{"$JS.FC.>", "$JS.FC.A.>", "$JS.FC.B.x"}, []string{"$JS.FC.>"}},
		{[]string{"a.*", "a.>"}, []string{"a.>"}},
		{[]string{"a.*", "a.b.>"}, []string{"a.*", "a.b.>"}},          // a.* matches no a.b.c
		{[]string{"a.*.c", "a.b.c", "a.b"}, []string{"a.*.c", "a.b"}}, // a.b is not a.*.c
		{[]string{"*.b", "a.b", "a.b.c"}, []string{"*.b", "a.b.c"}},
		{[]string{"a.b", "a.*"}, []string{"a.*"}},
		{[]string{"a.>", "a"}, []string{"a", "a.>"}}, // > needs a token
		{[]string{"x.y", "x.y", "x.z"}, []string{"x.y", "x.z"}},
		{[]string{"a.*.>", "a.b"}, []string{"a.*.>", "a.b"}},
		{[]string{"a.*.>", "a.b.c.d"}, []string{"a.*.>"}},
	} {
		if got := dedup(c.in); !slices.Equal(got, c.want) {
			t.Errorf("dedup(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPermissionsHoldNoCoveredSubject: no identity's user JWT lists a
// subject another of its subjects covers (the admin operator's listed 21
// of 150 that way: ~800 bytes the server decoded three times at every
// CONNECT).
func TestPermissionsHoldNoCoveredSubject(t *testing.T) {
	for _, roles := range [][]string{{RoleViewer}, {RoleAdmin}, {RoleViewer, RoleAdmin}} {
		p, err := Permissions("operator", "x1", roles)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{p.Pub.Allow, p.Sub.Allow} {
			for _, s := range list {
				for _, w := range list {
					if w != s && covers(w, s) {
						t.Errorf("operator %v: %s is covered by %s", roles, s, w)
					}
				}
			}
		}
	}
}
