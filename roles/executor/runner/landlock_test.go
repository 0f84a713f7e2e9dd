package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// With Landlock a confined step writes in its scope and nowhere else,
// whatever program tries; /dev/null stays writable; the limits and the
// process group still hold (the helper executes the shell in place).
func TestLandlockConfinesWrites(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	escaped := filepath.Join(outside, "escaped")
	if LandlockABI() == 0 {
		// Where the kernel offers no Landlock, a step with a scope runs
		// unconfined (the executor says so at start), and the reason is
		// given.
		if LandlockUnavailable() == "" {
			t.Fatal("no Landlock, and no reason given")
		}
		spec := shellSpec(`touch ` + escaped)
		spec.WriteScope = []string{"./**"}
		res := Run(context.Background(), spec, Options{DefaultCwd: dir, Landlock: true}, nil, nil)
		if _, err := os.Stat(escaped); res.Status != event.TaskSucceeded || err != nil {
			t.Fatalf("without Landlock a step with a scope should run unconfined: %+v, %v", res, err)
		}
		return
	}
	script := `touch inside && mkdir sub && echo x > sub/f && echo x > /dev/null && ` +
		`{ cp sub/f ` + escaped + ` 2>/dev/null; echo "cp $?"; } && ulimit -n && cat /proc/$$/comm && [ "$$" = "$(ps -o pgid= $$ | tr -d ' ')" ]`
	spec := shellSpec(script)
	spec.WriteScope = []string{"./**"}
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir, Landlock: true, Limits: Limits{OpenFiles: 99}}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v\n%s", res, res.OutputTail)
	}
	if got, want := out.text(StreamStdout), "cp 1\n99\nsh\n"; got != want {
		t.Fatalf("confined step printed %q, want %q", got, want)
	}
	for _, f := range []string{"inside", "sub/f"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("write in the scope failed: %v", err)
		}
	}
	if _, err := os.Stat(escaped); err == nil {
		t.Fatal("a confined step wrote outside its scope")
	}
	// Not confined without a scope, or without Landlock on.
	res = Run(context.Background(), shellSpec(`cp /dev/null `+escaped), Options{DefaultCwd: t.TempDir(), Landlock: true}, nil, nil)
	if _, err := os.Stat(escaped); res.Status != event.TaskSucceeded || err != nil {
		t.Fatalf("a step without a scope was confined: %+v, %v", res, err)
	}
}

func TestScopeDirs(t *testing.T) {
	got := scopeDirs([]string{"./**", "/tmp/**", "/srv/app/*.log", "~/.cache/**", "build/out/**", "/**", "/etc/hosts"}, "/work/s", "/home/u")
	want := []string{"/", "/etc/hosts", "/home/u/.cache", "/srv/app", "/tmp", "/work/s", "/work/s/build/out"}
	if !slices.Equal(got, want) {
		t.Fatalf("scopeDirs = %v, want %v", got, want)
	}
	if got := scopeDirs([]string{"~/x/**"}, "/w", ""); len(got) != 0 || got == nil {
		t.Fatalf("scopeDirs without a home = %#v, want an empty scope", got)
	}
	if a := sandboxCommand([]string{"/a"}, "true"); !strings.HasPrefix(strings.Join(a, " "), sandboxArg0+" /a -- /bin/sh -c true") {
		t.Fatalf("sandboxCommand = %v", a)
	}
}

// BenchmarkShellTrueLandlock is BenchmarkShellTrue confined by Landlock:
// the cost of the helper (one more exec, of the executor's binary).
func BenchmarkShellTrueLandlock(b *testing.B) {
	if LandlockABI() == 0 {
		b.Skip("Landlock is not available here")
	}
	ctx := context.Background()
	spec := shellSpec("true")
	spec.WriteScope = []string{"./**"}
	opts := Options{DefaultCwd: b.TempDir(), Landlock: true}
	for b.Loop() {
		if res := Run(ctx, spec, opts, nil, nil); res.Status != event.TaskSucceeded {
			b.Fatal(res.Error)
		}
	}
}

// Confinement and another user combine: the helper, executed as the
// step's user, confines it and executes the shell.
func TestLandlockAsAnotherUser(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if os.Geteuid() != 0 {
		// Only root switches users: elsewhere the step is refused, with
		// the reason, before anything runs (confined or not).
		spec := shellSpec(`touch ` + outside + `/ran`)
		spec.WriteScope = []string{"./**"}
		res := Run(context.Background(), spec, Options{DefaultCwd: dir, Landlock: true, RunAs: "nobody"}, nil, nil)
		if res.Status != event.TaskFailed || !strings.Contains(res.Error, "cannot switch users") {
			t.Fatalf("run as nobody without root = %+v, want a failure saying it cannot switch users", res)
		}
		if _, err := os.Stat(filepath.Join(outside, "ran")); err == nil {
			t.Fatal("the refused step ran")
		}
		return
	}
	for _, d := range []string{filepath.Dir(dir), dir, filepath.Dir(outside), outside} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if LandlockABI() == 0 {
		// Without Landlock the step still runs as the user, unconfined.
		res := Run(context.Background(), shellSpec(`id -un`), Options{DefaultCwd: dir, Landlock: true, RunAs: "nobody"}, nil, nil)
		if res.Status != event.TaskSucceeded || !strings.Contains(res.OutputTail, "nobody") {
			t.Fatalf("run as nobody without Landlock = %+v", res)
		}
		return
	}
	spec := shellSpec(`id -un; touch inside; touch ` + outside + `/escaped 2>/dev/null; echo "touch $?"`)
	spec.WriteScope = []string{"./**"}
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir, Landlock: true, RunAs: "nobody"}, nil, out.on)
	if res.Status != event.TaskSucceeded || out.text(StreamStdout) != "nobody\ntouch 1\n" {
		t.Fatalf("Run = %+v, printed %q", res, out.text(StreamStdout))
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Fatal("a confined step wrote outside its scope")
	}
}
