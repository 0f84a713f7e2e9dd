package runner

import (
	"math/rand/v2"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// Differential: dedupEnv keeps what os/exec's Cmd keeps, in the same
// order, and reports a NUL byte as it does, on random environments with
// duplicates, entries without "=", names starting with "=", empty entries
// and NUL bytes, short and long.
func TestDedupEnvAsExec(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	parts := []string{"A", "B", "PATH", "=", "==", "=A", "", "x", "\x00", "LC_ALL", "a"}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	for i := range 5000 {
		n := rng.IntN(8)
		if i%10 == 0 {
			n = 30 + rng.IntN(20) // past the short-list bound
		}
		env := make([]string, n)
		for j := range env {
			env[j] = word()
			if rng.IntN(3) > 0 {
				env[j] += "=" + word()
			}
		}
		got, err := dedupEnv(env)
		cmd := &exec.Cmd{Env: env}
		want := cmd.Environ()
		if len(want) == 0 {
			want = []string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dedupEnv(%q) = %q, os/exec keeps %q", env, got, want)
		}
		hasNUL := false
		for _, kv := range env {
			hasNUL = hasNUL || strings.IndexByte(kv, 0) >= 0
		}
		if (err != nil) != hasNUL {
			t.Fatalf("dedupEnv(%q) error %v, want one exactly when an entry holds NUL", env, err)
		}
	}
}
