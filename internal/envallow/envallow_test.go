package envallow

import "testing"

func TestAllowed(t *testing.T) {
	allow := []string{"PATH", "LC_*"}
	for name, want := range map[string]bool{"PATH": true, "LC_ALL": true, "LC_": true, "PATHX": false, "HOME": false, "": false} {
		if got := Allowed(allow, name); got != want {
			t.Errorf("Allowed(%v, %q) = %t, want %t", allow, name, got, want)
		}
	}
	if !Allowed([]string{"*"}, "ANY") {
		t.Error("* allows every name")
	}
}

func TestCheck(t *testing.T) {
	if err := Check([]string{"PATH", "LC_*", "*"}); err != nil {
		t.Errorf("valid allowlist refused: %v", err)
	}
	for _, bad := range []string{"", "A=B", "A B", "A**", "*A"} {
		if err := Check([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
