package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// output records onOutput calls.
type output struct {
	mu     sync.Mutex
	chunks map[string][]string
}

func (o *output) on(stream string, chunk []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.chunks == nil {
		o.chunks = map[string][]string{}
	}
	o.chunks[stream] = append(o.chunks[stream], string(chunk))
}

func (o *output) text(stream string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.chunks[stream], "")
}

func shellSpec(cmd string) Spec { return Spec{Kind: event.KindShell, Command: cmd} }

func TestSuccessReportsContext(t *testing.T) {
	dir := t.TempDir()
	var out output
	var startedPID int
	spec := shellSpec(`echo hello; echo oops >&2; pwd`)
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, func(pid int) { startedPID = pid }, out.on)
	if res.Status != event.TaskSucceeded || res.Class != "" || res.Error != "" || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, want succeeded", res)
	}
	if res.PID <= 0 || res.PID != startedPID {
		t.Errorf("PID = %d, onStart got %d", res.PID, startedPID)
	}
	if res.Cwd != dir || !filepath.IsAbs(res.Cwd) {
		t.Errorf("Cwd = %q, want %q", res.Cwd, dir)
	}
	if res.User != currentUser() || res.User == "" {
		t.Errorf("User = %q, want %q", res.User, currentUser())
	}
	if res.Started.IsZero() || res.Duration <= 0 {
		t.Errorf("Started %v Duration %v", res.Started, res.Duration)
	}
	if got, want := out.text(StreamStdout), "hello\n"+dir+"\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got := out.text(StreamStderr); got != "oops\n" {
		t.Errorf("stderr = %q, want %q", got, "oops\n")
	}
	for _, s := range []string{"hello\n", "oops\n", dir + "\n"} {
		if !strings.Contains(res.OutputTail, s) {
			t.Errorf("OutputTail %q lacks %q", res.OutputTail, s)
		}
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name, cmd string
		code      int
		wantErr   string
	}{
		{"exit 2", "exit 2", 2, "exit status 2"},
		{"last command", "echo x; false", 1, "exit status 1"},
		{"exit 42 from background wait", "(exit 42) & wait $!", 42, "exit status 42"},
		// The script's shell killed by a signal: 128+9, the shell convention.
		{"script kills itself", "kill -9 $$", 137, "exit status 137"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Run(context.Background(), shellSpec(tc.cmd), Options{DefaultCwd: t.TempDir()}, nil, nil)
			if res.Status != event.TaskFailed || res.Class != event.ClassLogic || res.ExitCode != tc.code || res.Error != tc.wantErr {
				t.Fatalf("Run(%q) = status %q class %q exit %d err %q; want failed logic %d %q",
					tc.cmd, res.Status, res.Class, res.ExitCode, res.Error, tc.code, tc.wantErr)
			}
		})
	}
}

// groupWatcher watches the process group of a step from onStart on and
// records its live members once there are at least min of them.
type groupWatcher struct {
	min  int
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	seen []int
}

func newGroupWatcher(min int) *groupWatcher {
	ctx, stop := context.WithCancel(context.Background())
	return &groupWatcher{min: min, ctx: ctx, stop: stop, done: make(chan struct{})}
}

func (w *groupWatcher) onStart(pid int) {
	go func() {
		defer close(w.done)
		_ = poll.WaitContext(w.ctx, func() bool {
			m := groupMembers(pid)
			if len(m) < w.min {
				return false
			}
			w.mu.Lock()
			w.seen = m
			w.mu.Unlock()
			return true
		})
	}()
}

// members waits for the watcher and returns what it saw; call it after Run
// returned (it stops the watch) or from a goroutine while Run runs.
func (w *groupWatcher) members() []int {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// finish stops the watch and returns what was seen.
func (w *groupWatcher) finish() []int {
	w.stop()
	return w.members()
}

// runUntilSeen runs spec with growing timeouts until the watcher saw the
// whole group before the timeout struck (on a loaded machine the script may
// not have forked everything within the first timeout).
func runUntilSeen(t *testing.T, spec Spec, opts Options, min int) (Result, []int) {
	t.Helper()
	for timeout := spec.Timeout; timeout <= 16*spec.Timeout; timeout *= 2 {
		w := newGroupWatcher(min)
		spec.Timeout = timeout
		res := Run(context.Background(), spec, opts, w.onStart, nil)
		if m := w.finish(); len(m) >= min {
			return res, m
		}
		t.Logf("timeout %s struck before the group had %d members; retrying", timeout, min)
	}
	t.Fatalf("never saw %d members in the group", min)
	return Result{}, nil
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d outlived Run", pid)
		}
	}
}

func TestTimeoutKillsWholeGroup(t *testing.T) {
	spec := shellSpec(`sleep 100 & sleep 100; wait`)
	spec.Timeout = 250 * time.Millisecond
	// script shell + two sleeps
	res, m := runUntilSeen(t, spec, Options{DefaultCwd: t.TempDir()}, 3)
	assertGone(t, m)
	if res.Status != event.TaskFailed || res.Class != event.ClassTransient || !res.TimedOut || res.ExitCode != -1 ||
		!strings.HasPrefix(res.Error, "timed out after ") ||
		!strings.HasSuffix(res.Error, "; killed process group "+strconv.Itoa(res.PID)) {
		t.Fatalf("Run = %+v; want failed transient, timed out, exit -1", res)
	}
	if res.Duration > spec.Timeout*16+5*time.Second {
		t.Errorf("Run took %s", res.Duration)
	}
}

func TestTimeoutErrorMessage(t *testing.T) {
	spec := shellSpec(`sleep 100`)
	spec.Timeout = 30 * time.Millisecond
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil, nil)
	if want := "timed out after 30ms; killed process group " + strconv.Itoa(res.PID); res.Error != want {
		t.Fatalf("Error = %q, want %q", res.Error, want)
	}
}

func TestTimeoutEscalatesToSIGKILL(t *testing.T) {
	// '' makes TERM ignored in the script and, inherited, in sleep too; a
	// running sleep proves the trap is in place.
	spec := shellSpec(`trap '' TERM; sleep 100; echo never`)
	spec.Timeout = 250 * time.Millisecond
	grace := 300 * time.Millisecond
	res, m := runUntilSeen(t, spec, Options{DefaultCwd: t.TempDir(), KillGrace: grace}, 2)
	assertGone(t, m)
	if !res.TimedOut || res.ExitCode != -1 || res.Status != event.TaskFailed {
		t.Fatalf("Run = %+v, want timed out", res)
	}
	if res.Duration < spec.Timeout+grace {
		t.Errorf("Duration %s: SIGKILL came before the %s grace", res.Duration, grace)
	}
}

func TestCancelKillsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newGroupWatcher(2)
	onStart := func(pid int) {
		w.onStart(pid)
		go func() {
			w.members()
			cancel()
		}()
	}
	res := Run(ctx, shellSpec(`sleep 100 & wait`), Options{DefaultCwd: t.TempDir()}, onStart, nil)
	m := w.finish()
	if len(m) < 2 {
		t.Fatalf("saw group members %v, want 2", m)
	}
	assertGone(t, m)
	if res.Status != event.TaskCancelled || res.Class != event.ClassTransient || res.ExitCode != -1 ||
		!strings.Contains(res.Error, "killed process group "+strconv.Itoa(res.PID)) {
		t.Fatalf("Run = %+v, want cancelled", res)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	res := Run(ctx, shellSpec(`touch ran`), Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskCancelled || res.PID != 0 {
		t.Fatalf("Run = %+v, want cancelled without a process", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the step ran")
	}
}

// Background processes left behind by a finished script are stopped.
func TestLeftoverBackgroundStopped(t *testing.T) {
	dir := t.TempDir()
	res := Run(context.Background(), shellSpec(`sleep 100 & echo $! > bg.pid; echo done`), Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	pid, ok := readPID(filepath.Join(dir, "bg.pid"))
	if !ok {
		t.Fatal("no bg.pid")
	}
	assertGone(t, []int{pid})
	if res.Duration > 3*time.Second {
		t.Errorf("Duration %s: waited for the leftover", res.Duration)
	}
}

// A step's shell killed from outside (not by the runner) exits 128+N, as a
// shell reports it, and what it leaves behind is stopped.
func TestStepKilledFromOutside(t *testing.T) {
	dir := t.TempDir()
	spec := shellSpec(`sleep 100 & echo $! > bg.pid; sleep 100`)
	onStart := func(pid int) {
		go func() {
			// Killed even when bg.pid never comes: the test then fails below.
			_ = poll.Wait(10*time.Second, func() bool {
				_, ok := readPID(filepath.Join(dir, "bg.pid"))
				return ok
			})
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}()
	}
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, onStart, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassLogic || res.ExitCode != 137 || res.Error != "exit status 137" {
		t.Fatalf("Run = %+v, want failed logic, exit status 137", res)
	}
	bg, ok := readPID(filepath.Join(dir, "bg.pid"))
	if !ok {
		t.Fatal("the script never wrote bg.pid")
	}
	assertGone(t, []int{bg})
}

func TestCwd(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cwd, wantCwd, wantErr string
	}{
		{"", base, ""},
		{"sub", filepath.Join(base, "sub"), ""},
		{filepath.Join(base, "sub"), filepath.Join(base, "sub"), ""},
		{"/nonexistent/x", "/nonexistent/x", "cwd /nonexistent/x: no such file or directory"},
		{file, file, "cwd " + file + ": not a directory"},
	}
	for _, tc := range tests {
		spec := shellSpec(`pwd`)
		spec.Cwd = tc.cwd
		var out output
		res := Run(context.Background(), spec, Options{DefaultCwd: base}, nil, out.on)
		if res.Cwd != tc.wantCwd || res.Error != tc.wantErr {
			t.Errorf("Cwd %q: got cwd %q err %q, want %q %q", tc.cwd, res.Cwd, res.Error, tc.wantCwd, tc.wantErr)
			continue
		}
		if tc.wantErr != "" {
			if res.Status != event.TaskFailed || res.Class != event.ClassLogic || res.PID != 0 {
				t.Errorf("Cwd %q: %+v, want failed logic without a process", tc.cwd, res)
			}
			continue
		}
		if got := out.text(StreamStdout); got != tc.wantCwd+"\n" {
			t.Errorf("Cwd %q: step ran in %q", tc.cwd, got)
		}
	}
}

func TestEnvIsMinimal(t *testing.T) {
	t.Setenv("AGENTIC_TEST_EXECUTOR_SECRET", "s3")
	t.Setenv("HOME", "/home/tester")
	dir := t.TempDir()
	spec := shellSpec(`env`)
	spec.Env = map[string]string{"FOO": "bar", "HOME": "/override"}
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.text(StreamStdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	if _, ok := env["AGENTIC_TEST_EXECUTOR_SECRET"]; ok {
		t.Error("the executor's environment leaked into the step")
	}
	for k, want := range map[string]string{"FOO": "bar", "HOME": "/override", "PWD": dir, "PATH": os.Getenv("PATH")} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	allowed := map[string]bool{"PWD": true, "FOO": true, "SHLVL": true, "_": true, "OLDPWD": true}
	for k := range env {
		if !allowed[k] && !EnvAllowed(DefaultEnvAllow, k) {
			t.Errorf("unexpected variable %s in the step's environment", k)
		}
	}

	spec.Env = map[string]string{"BAD=KEY": "x"}
	res = Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassLogic || !strings.Contains(res.Error, `"BAD=KEY"`) {
		t.Fatalf("bad env key: %+v", res)
	}
}

func TestInvalidSpecs(t *testing.T) {
	for _, spec := range []Spec{
		{Kind: "teleport", Command: "true"},
		{Kind: event.KindShell, Command: "  "},
	} {
		res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil, nil)
		if res.Status != event.TaskFailed || res.Class != event.ClassLogic || res.PID != 0 || res.Error == "" {
			t.Errorf("Run(%+v) = %+v, want failed logic without a process", spec, res)
		}
	}
}

func TestGuards(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "exists"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		creates    string
		check      string
		wantStatus event.TaskStatus
		wantRan    bool
		wantReason string
	}{
		{"creates exists (relative)", "exists", "", event.TaskSkipped, false, "creates " + filepath.Join(dir, "exists") + " exists"},
		{"creates exists (absolute)", filepath.Join(dir, "exists"), "", event.TaskSkipped, false, "creates " + filepath.Join(dir, "exists") + " exists"},
		{"creates missing", "missing", "", event.TaskSucceeded, true, ""},
		{"check passes", "", "test -f exists", event.TaskSkipped, false, "check exited 0"},
		{"check fails", "", "test -f missing", event.TaskSucceeded, true, ""},
		{"check sees step env", "", `[ "$MARK" = yes ]`, event.TaskSkipped, false, "check exited 0"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := "ran" + strconv.Itoa(i)
			spec := shellSpec("touch " + marker)
			spec.Creates, spec.Check = tc.creates, tc.check
			spec.Env = map[string]string{"MARK": "yes"}
			res := Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, nil)
			if res.Status != tc.wantStatus || res.Reason != tc.wantReason {
				t.Fatalf("Run = %+v, want status %q reason %q", res, tc.wantStatus, tc.wantReason)
			}
			_, err := os.Stat(filepath.Join(dir, marker))
			if ran := err == nil; ran != tc.wantRan {
				t.Fatalf("step ran = %v, want %v", ran, tc.wantRan)
			}
		})
	}
}

func TestCheckTimeout(t *testing.T) {
	dir := t.TempDir()
	spec := shellSpec("touch ran")
	spec.Check = "sleep 100"
	spec.Timeout = 200 * time.Millisecond
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, nil)
	if res.Status != event.TaskFailed || res.Class != event.ClassTransient || !res.TimedOut ||
		!strings.HasPrefix(res.Error, "check timed out after 200ms; killed process group ") {
		t.Fatalf("Run = %+v, want failed transient check timeout", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the step ran after its check timed out")
	}
}

func TestNoop(t *testing.T) {
	res := Run(context.Background(), Spec{Kind: event.KindNoop, Command: "exit 1"}, Options{}, nil, nil)
	if res.Status != event.TaskSucceeded || res.PID != 0 || res.Started.IsZero() {
		t.Fatalf("noop = %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := Run(ctx, Spec{Kind: event.KindNoop}, Options{}, nil, nil); res.Status != event.TaskCancelled {
		t.Fatalf("noop with cancelled ctx = %+v", res)
	}
	spec := Spec{Kind: event.KindNoop}
	ctx = context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = Run(ctx, spec, Options{}, nil, nil) }); n != 0 {
		t.Fatalf("noop allocates %.0f times per run, want 0", n)
	}
}

func BenchmarkNoop(b *testing.B) {
	ctx := context.Background()
	spec := Spec{Kind: event.KindNoop}
	b.ReportAllocs()
	for b.Loop() {
		_ = Run(ctx, spec, Options{}, nil, nil)
	}
}

// BenchmarkShellTrue runs steps `true` one after another. Reported beside
// ns/op: the CPU time per step of the test process (self_us/step) and of
// the guard process (guard_us/step, at the 10ms resolution of
// /proc/<pid>/stat: run a few thousand steps).
func BenchmarkShellTrue(b *testing.B) {
	ctx := context.Background()
	spec := shellSpec("true")
	opts := Options{DefaultCwd: b.TempDir()}
	if res := Run(ctx, spec, opts, nil, nil); res.Status != event.TaskSucceeded { // start the guard
		b.Fatal(res.Error)
	}
	guardian.mu.Lock()
	guard := guardian.cmd.Process.Pid
	guardian.mu.Unlock()
	self0, guard0 := selfCPU(b), procCPU(b, guard)
	for b.Loop() {
		if res := Run(ctx, spec, opts, nil, nil); res.Status != event.TaskSucceeded {
			b.Fatal(res.Error)
		}
	}
	b.ReportMetric(float64((selfCPU(b)-self0).Microseconds())/float64(b.N), "self_us/step")
	b.ReportMetric(float64((procCPU(b, guard)-guard0).Microseconds())/float64(b.N), "guard_us/step")
}

// BenchmarkShellTrueSlots runs 1,000 steps `true` four at a time, with an
// onOutput as the executor passes one, and, in the same function, forks
// 1,000 `sh -c true` with `xargs -P 4` before and after: the runner's cost
// per step against a bare fork. cpu_us/step is the CPU the test process
// used per step (getrusage RUSAGE_SELF: the runner's own, the forks'
// children not included).
func BenchmarkShellTrueSlots(b *testing.B) {
	const steps, slots = 1000, 4
	spec := shellSpec("true")
	opts := Options{DefaultCwd: b.TempDir()}
	onOutput := func(string, []byte) {}
	var runs, raw float64
	var cpu time.Duration
	for b.Loop() {
		before := xargsRate(b, steps, slots)
		work := make(chan struct{}, steps)
		for range steps {
			work <- struct{}{}
		}
		close(work)
		cpu0 := selfCPU(b)
		start := time.Now()
		var wg sync.WaitGroup
		for range slots {
			wg.Go(func() {
				for range work {
					if res := Run(context.Background(), spec, opts, nil, onOutput); res.Status != event.TaskSucceeded {
						b.Error(res.Error)
					}
				}
			})
		}
		wg.Wait()
		runs += steps / time.Since(start).Seconds()
		cpu += selfCPU(b) - cpu0
		raw += (before + xargsRate(b, steps, slots)) / 2
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n/steps, "cpu_us/step")
	b.ReportMetric(runs/n, "steps/s")
	b.ReportMetric(raw/n, "raw_procs/s")
	b.ReportMetric(runs/raw, "ratio_steps_over_raw")
	b.ReportMetric(0, "ns/op")
}

// selfCPU is the user and system CPU time the test process has used.
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// xargsRate forks procs `sh -c true`, slots at once, and returns
// processes/s.
func xargsRate(b *testing.B, procs, slots int) float64 {
	cmd := exec.Command("xargs", "-P", strconv.Itoa(slots), "-n", "1", "sh", "-c", "true")
	cmd.Stdin = strings.NewReader(strings.Repeat("x\n", procs))
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("xargs: %v\n%s", err, out)
	}
	return float64(procs) / time.Since(start).Seconds()
}

func TestConcurrentSteps(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	results := make([]Result, 6)
	for i := range results {
		wg.Go(func() {
			results[i] = Run(context.Background(), shellSpec("echo step"+strconv.Itoa(i)+"; exit "+strconv.Itoa(i%3)), Options{DefaultCwd: dir}, nil, nil)
		})
	}
	wg.Wait()
	for i, res := range results {
		if res.ExitCode != i%3 || res.OutputTail != "step"+strconv.Itoa(i)+"\n" {
			t.Errorf("step %d: exit %d tail %q", i, res.ExitCode, res.OutputTail)
		}
	}
}
