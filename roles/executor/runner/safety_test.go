package runner

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// A variable the allowlist does not name is absent from the step; one it
// names (exactly or by a prefix) is there, and the step's own Env is added.
func TestEnvAllowlist(t *testing.T) {
	t.Setenv("AGENTIC_OK_ONE", "1")
	t.Setenv("AGENTIC_SECRET_TOKEN", "s3")
	t.Setenv("LC_TESTING", "x")
	spec := shellSpec(`env`)
	spec.Env = map[string]string{"STEP_VAR": "v"}
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir(), EnvAllow: []string{"PATH", "AGENTIC_OK_*"}}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	env := envOf(out.text(StreamStdout))
	if env["AGENTIC_OK_ONE"] != "1" || env["STEP_VAR"] != "v" || env["PATH"] != os.Getenv("PATH") {
		t.Errorf("allowed variables missing: %v", env)
	}
	for _, k := range []string{"AGENTIC_SECRET_TOKEN", "LC_TESTING", "HOME"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s is not on the allowlist but the step has it", k)
		}
	}
	// The default allowlist passes the locale family.
	out = output{}
	res = Run(context.Background(), shellSpec(`env`), Options{DefaultCwd: t.TempDir()}, nil, out.on)
	if env := envOf(out.text(StreamStdout)); res.Status != event.TaskSucceeded || env["LC_TESTING"] != "x" || env["AGENTIC_SECRET_TOKEN"] != "" {
		t.Errorf("default allowlist: %+v %v", res, env)
	}
	// Without PATH on the list the step still finds its programs.
	res = Run(context.Background(), shellSpec(`ls / >/dev/null`), Options{DefaultCwd: t.TempDir(), EnvAllow: []string{}}, nil, nil)
	if res.Status != event.TaskSucceeded {
		t.Errorf("empty allowlist: %+v", res)
	}
	if err := CheckEnvAllow([]string{"PATH", "LC_*", "*"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"A=B", "LC_**", "", "X Y"} {
		if err := CheckEnvAllow([]string{bad}); err == nil {
			t.Errorf("CheckEnvAllow(%q) = nil", bad)
		}
	}
}

func envOf(s string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	return env
}

// Limits hold in the step's shell and its children, soft and hard, and in
// the Check guard too.
func TestLimitsInChild(t *testing.T) {
	dir := t.TempDir()
	spec := shellSpec(`ulimit -n; ulimit -Hn; sh -c 'ulimit -n'; ulimit -v`)
	spec.Check = `[ "$(ulimit -n)" != 123 ]` // exits 1 under the limit: the step runs
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir, Limits: Limits{OpenFiles: 123, AddressSpace: 8 << 30}}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	if got, want := out.text(StreamStdout), "123\n123\n123\n8388608\n"; got != want {
		t.Fatalf("limits in the step: %q, want %q", got, want)
	}
	// The step cannot raise them again.
	res = Run(context.Background(), shellSpec(`ulimit -n 4096`), Options{DefaultCwd: dir, Limits: Limits{OpenFiles: 123}}, nil, nil)
	if res.Status != event.TaskFailed {
		t.Fatalf("raising the hard limit: %+v, want failed", res)
	}
	if s := (Limits{OpenFiles: 64, AddressSpace: 1 << 30}).String(); s != "open files 64, address space 1024 MiB" {
		t.Errorf("String = %q", s)
	}
}

// fakeRoot makes the runner believe it runs as root for one test.
func fakeRoot(t *testing.T) {
	old := geteuid
	geteuid = func() int { return 0 }
	t.Cleanup(func() { geteuid = old })
}

// An executor running as root with no user configured refuses steps (class
// policy) rather than running them as root; a step asking for root itself
// is refused unless the executor's run_as is root.
func TestRefuseRoot(t *testing.T) {
	fakeRoot(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	res := Run(context.Background(), shellSpec("touch "+marker), Options{DefaultCwd: dir, RefuseRoot: true}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassPolicy || res.PID != 0 ||
		!strings.Contains(res.Error, "refusing to run the step as root") || !strings.Contains(res.Error, "executor.run_as") {
		t.Fatalf("Run = %+v, want refused with class policy", res)
	}
	spec := shellSpec("touch " + marker)
	spec.RunAs = "root"
	res = Run(context.Background(), spec, Options{DefaultCwd: dir, RefuseRoot: true, RunAs: "nobody"}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassPolicy || !strings.Contains(res.Error, "only on an executor whose executor.run_as is root") {
		t.Fatalf("step asking for root: %+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused step ran")
	}
	spec.RunAs = "no-such-user-agentic"
	res = Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassLogic || !strings.Contains(res.Error, "run as no-such-user-agentic: no such user") {
		t.Fatalf("unknown user: %+v", res)
	}
}

// A step may name the executor's own user; naming another one needs root.
func TestRunAsSelf(t *testing.T) {
	dir := t.TempDir()
	spec := shellSpec("id -u")
	spec.RunAs = currentUser()
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir, RefuseRoot: true, RunAs: currentUser()}, nil, out.on)
	if res.Status != event.TaskSucceeded || res.User != currentUser() || strings.TrimSpace(out.text(StreamStdout)) != itoa(os.Geteuid()) {
		t.Fatalf("Run = %+v, out %q", res, out.text(StreamStdout))
	}
	if os.Geteuid() == 0 {
		return
	}
	spec.RunAs = "root"
	res = Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskFailed || !strings.Contains(res.Error, "cannot run as root: the executor runs as") {
		t.Fatalf("non-root executor switching to root: %+v", res)
	}
}

// An executor running as root runs a step as the configured unprivileged
// user: its processes have the user's ids, HOME and USER.
func TestRunAsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root: run the tests as root to cover run_as")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this machine")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var out output
	res := Run(context.Background(), shellSpec(`id -u; id -g; echo "$HOME $USER"; touch mine; stat -c %u mine`),
		Options{DefaultCwd: dir, RefuseRoot: true, RunAs: "nobody"}, nil, out.on)
	if res.Status != event.TaskSucceeded || res.User != "nobody" {
		t.Fatalf("Run = %+v", res)
	}
	want := u.Uid + "\n" + u.Gid + "\n" + u.HomeDir + " nobody\n" + u.Uid + "\n"
	if got := out.text(StreamStdout); got != want {
		t.Fatalf("step as nobody printed %q, want %q", got, want)
	}
	// A working directory the user cannot reach says so.
	closed := filepath.Join(t.TempDir(), "closed")
	work := filepath.Join(closed, "work")
	if err := os.MkdirAll(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	res = Run(context.Background(), shellSpec("true"), Options{DefaultCwd: work, RefuseRoot: true, RunAs: "nobody"}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassLogic || !strings.Contains(res.Error, "working directory "+work+" is searchable") {
		t.Fatalf("step as nobody in an unreachable directory = %+v", res)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
