package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/policy"
)

// testPolicy denies shred, asks approval for sleep, allows the rest, and
// scopes writes to the working directory (the executor's work directory
// for the cwd check) and /tmp.
const testPolicy = `name: exec-test
default: allow
scopes: {files: ["./**", "/tmp/**"]}
rules:
  - {name: no-shred, pattern: "shred", action: deny}
  - {name: gated-sleep, pattern: "sleep", level: high, require_confirmation: true}
`

// policyLedger serves policy.show on the harness's NATS server, as a
// ledger node does, with the texts given by version; calls counts the
// requests it answered.
type policyLedger struct {
	client *api.Client
	refs   map[int64]event.PolicyRef
	calls  atomic.Int64
}

func (h *harness) servePolicies(texts map[int64]string) *policyLedger {
	h.t.Helper()
	c := bustest.Connect(h.t, h.srv)
	l := &policyLedger{refs: map[int64]event.PolicyRef{}}
	for v, text := range texts {
		p, err := policy.Parse([]byte(text), "test")
		if err != nil {
			h.t.Fatal(err)
		}
		l.refs[v] = event.PolicyRef{Version: v, Hash: p.Hash()}
	}
	s := api.NewServer(c.NC, "ledger-1", nil)
	api.HandleTyped(s, api.MethodPolicyShow, func(_ context.Context, req api.PolicyRequest) (api.PolicyVersion, error) {
		l.calls.Add(1)
		text, ok := texts[req.Version]
		if !ok {
			return api.PolicyVersion{}, fmt.Errorf("policy version %d: %w", req.Version, api.ErrNotFound)
		}
		return api.PolicyVersion{PolicyRef: l.refs[req.Version], Name: "exec-test", Text: text}, nil
	})
	if err := s.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(s.Stop)
	l.client = api.NewClient(c.NC, 5*time.Second)
	return l
}

// assignJudged publishes a task.assigned of step to node, judged by the
// leader with ref and approved for the gate subject approved.
func (h *harness) assignJudged(node, run string, step event.Step, ref event.PolicyRef, approved string) {
	h.t.Helper()
	d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{
		Decision: event.Decision{Epoch: 1}, Attempt: 1, Node: node, Step: step, Policy: ref, Approved: approved,
	})
	d.Target = node
	h.publish(d)
}

// result waits for the one task.finished of step.
func result(t *testing.T, rec *recorder, step string) event.TaskFinishedData {
	t.Helper()
	poll.Eventually(t, 20*time.Second, "task.finished of "+step, func() bool { return len(rec.finished(step)) > 0 })
	f := rec.finished(step)
	if len(f) != 1 {
		t.Fatalf("%s finished %d times: %+v", step, len(f), f)
	}
	return f[0]
}

// refusedWith checks that step was refused with class policy, an error
// containing want, without starting and without writing its marker.
func (h *harness) refusedWith(t *testing.T, rec *recorder, step, want string) {
	t.Helper()
	f := result(t, rec, step)
	if f.Status != event.TaskFailed || f.Class != event.ClassPolicy || !strings.HasPrefix(f.Error, "refused by the executor: ") ||
		!strings.Contains(f.Error, want) {
		t.Fatalf("%s: %+v, want refused with class policy and %q", step, f, want)
	}
	if rec.started(step) {
		t.Fatalf("%s: a refused step was reported started", step)
	}
	if h.ran(step) {
		t.Fatalf("%s: a refused step ran", step)
	}
}

func shellStep(id, script string) event.Step {
	return event.Step{ID: id, Kind: event.KindShell, Run: script}
}

// The executor judges every assignment again with the policy version it
// names: deny never runs; confirm runs only with an approval of exactly
// this step and policy version; allow runs; the version is fetched once.
func TestExecutorJudgesAgain(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	ref := led.refs[1]
	rec := &recorder{}
	ex := h.start("exec-1", t.TempDir(), rec, func(c *Config) { c.Safety.Policies = APIPolicies(led.client) })

	h.assignJudged("exec-1", "r1", shellStep("denied", "touch "+h.marker("denied")+"; shred --version"), ref, "")
	h.refusedWith(t, rec, "denied", "policy version 1 denies it: rule no-shred")

	gated := shellStep("gated", "touch "+h.marker("gated")+"; sleep 0")
	h.assignJudged("exec-1", "r1", gated, ref, "")
	h.refusedWith(t, rec, "gated", "not approved for this exact command: policy version 1 asks for approval (rule gated-sleep")

	// An approval of another command (the step was edited after it), or
	// of the same command under another policy version, does not count.
	tampered := shellStep("tampered", "touch "+h.marker("tampered")+"; sleep 0 # edited")
	h.assignJudged("exec-1", "r1", tampered, ref, event.GateSubject(shellStep("tampered", "touch "+h.marker("tampered")+"; sleep 0"), ref))
	h.refusedWith(t, rec, "tampered", "the approval is of sha256:")
	other := shellStep("other-version", "touch "+h.marker("other-version")+"; sleep 0")
	h.assignJudged("exec-1", "r1", other, ref, event.GateSubject(other, event.PolicyRef{Version: 2, Hash: ref.Hash}))
	h.refusedWith(t, rec, "other-version", "not approved for this exact command")

	approved := shellStep("approved", "echo x >> "+h.marker("approved")+"; sleep 0")
	h.assignJudged("exec-1", "r1", approved, ref, event.GateSubject(approved, ref))
	if f := result(t, rec, "approved"); f.Status != event.TaskSucceeded {
		t.Fatalf("approved step: %+v", f)
	}
	if b, err := os.ReadFile(h.marker("approved")); err != nil || string(b) != "x\n" {
		t.Fatalf("approved step's marker %q, %v: want it written once", b, err)
	}

	h.assignJudged("exec-1", "r1", shellStep("allowed", "touch "+h.marker("allowed")), ref, "")
	if f := result(t, rec, "allowed"); f.Status != event.TaskSucceeded || !h.ran("allowed") {
		t.Fatalf("allowed step: %+v", f)
	}
	// The Check guard is judged too.
	checked := shellStep("checked", "touch "+h.marker("checked"))
	checked.Check = "shred --version"
	h.assignJudged("exec-1", "r1", checked, ref, "")
	h.refusedWith(t, rec, "checked", "check: ")
	// So is an environment that can run hidden code: unresolved, which
	// this policy confirms, and nobody approved.
	preload := shellStep("preload", "touch "+h.marker("preload"))
	preload.Env = map[string]string{"LD_PRELOAD": "/tmp/x.so", "FOO": "bar"}
	h.assignJudged("exec-1", "r1", preload, ref, "")
	h.refusedWith(t, rec, "preload", "env sets LD_PRELOAD, which can make programs run code the command does not show")
	if n := ex.Stats().PolicyRefused; n != 6 {
		t.Errorf("Stats.PolicyRefused = %d, want 6", n)
	}
	if n := led.calls.Load(); n != 1 {
		t.Errorf("policy.show asked %d times for one version, want 1 (cached by hash)", n)
	}
}

// A version that cannot be fetched, or whose text does not hash as the
// assignment says, is not judged with: the step is refused, the reason
// naming the version. So is every step with a policy when the executor has
// no way to fetch one.
func TestUnjudgeablePolicyRefused(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) { c.Safety.Policies = APIPolicies(led.client) })

	h.assignJudged("exec-1", "r1", shellStep("unknown", "touch "+h.marker("unknown")), event.PolicyRef{Version: 7, Hash: led.refs[1].Hash}, "")
	h.refusedWith(t, rec, "unknown", "cannot judge the step with policy version 7")
	h.assignJudged("exec-1", "r1", shellStep("tampered-policy", "touch "+h.marker("tampered-policy")), event.PolicyRef{Version: 1, Hash: "sha256:0000"}, "")
	h.refusedWith(t, rec, "tampered-policy", "hashes to "+led.refs[1].Hash+", the assignment names sha256:0000")

	rec2 := &recorder{}
	h.start("exec-2", t.TempDir(), rec2, nil)
	h.assignJudged("exec-2", "r1", shellStep("no-source", "touch "+h.marker("no-source")), led.refs[1], "")
	h.refusedWith(t, rec2, "no-source", "cannot judge the step with policy version 1")

	// An assignment naming no policy (an older leader) runs as before.
	h.assignJudged("exec-2", "r1", shellStep("old-leader", "touch "+h.marker("old-leader")), event.PolicyRef{}, "")
	if f := result(t, rec2, "old-leader"); f.Status != event.TaskSucceeded || !h.ran("old-leader") {
		t.Fatalf("step of an older leader: %+v", f)
	}
}

// A working directory outside the policy's file scope is refused; one
// inside it (the work directory, /tmp) runs.
func TestCwdOutsideScopeRefused(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) { c.Safety.Policies = APIPolicies(led.client) })

	outside, err := os.MkdirTemp("/var/tmp", "agentic-scope-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	s := shellStep("outside", "touch "+h.marker("outside"))
	s.Cwd = outside
	h.assignJudged("exec-1", "r1", s, led.refs[1], "")
	h.refusedWith(t, rec, "outside", "working directory "+outside+" lies outside the file scope [./** /tmp/**] of policy version 1")

	sub := filepath.Join(h.work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	in := shellStep("inside", "touch "+h.marker("inside"))
	in.Cwd = "sub"
	h.assignJudged("exec-1", "r1", in, led.refs[1], "")
	if f := result(t, rec, "inside"); f.Status != event.TaskSucceeded || f.Cwd != sub {
		t.Fatalf("step in the work directory: %+v", f)
	}
}

// The executor's Safety reaches the runner: the environment allowlist and
// the resource limits hold in the step.
func TestSafetyHardensSteps(t *testing.T) {
	t.Setenv("AGENTIC_EXEC_TEST_SECRET", "s3")
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Safety = Safety{EnvAllow: []string{"PATH"}, Limits: runner.Limits{OpenFiles: 77}}
	})
	out := filepath.Join(h.work, "env.txt")
	h.assign("exec-1", "r1", "hard", 1, "env > "+out+"; ulimit -n >> "+out)
	if f := result(t, rec, "hard"); f.Status != event.TaskSucceeded {
		t.Fatalf("step: %+v", f)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "AGENTIC_EXEC_TEST_SECRET") || strings.Contains(s, "HOME=") || !strings.HasSuffix(s, "\n77\n") {
		t.Fatalf("step saw:\n%s\nwant no AGENTIC_EXEC_TEST_SECRET, no HOME, and 77 open files", s)
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// At start the executor logs its safety settings in one line.
func TestStartupSafetyLine(t *testing.T) {
	h := newHarness(t)
	var logs lockedBuffer
	ex := New(roles.Env{Node: "exec-1", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Emit: &recorder{}}, Config{
		JS: h.js, Verifier: h.verifier, StateDir: t.TempDir(), Runner: runner.Options{DefaultCwd: h.work},
		Safety: Safety{EnvAllow: []string{"PATH", "LC_*"}, RunAs: "nobody", Limits: runner.Limits{OpenFiles: 64}, RefuseRoot: true},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.stop(ex, 10*time.Second) })
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="executor safety"`) {
			line = l
		}
	}
	for _, want := range []string{"policy_judging=false", "env_allow=2", `env_allow_list=PATH,LC_*`, "run_as=nobody",
		`limits="open files 64"`, `landlock="not active: `} {
		if !strings.Contains(line, want) {
			t.Errorf("safety line %q lacks %s", line, want)
		}
	}
}

// With executor.landlock, a step the policy allows without approval
// cannot write outside the policy's file scope even through a program the
// judge cannot see into (a script); a step an operator approved exactly
// is not confined.
func TestLandlockConfinesAllowedSteps(t *testing.T) {
	confines := runner.LandlockABI() > 0 // elsewhere steps run unconfined, as the startup line says
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	ref := led.refs[1]
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Safety = Safety{Policies: APIPolicies(led.client), Landlock: true}
	})
	outside, err := os.MkdirTemp("/var/tmp", "agentic-landlock-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	script := filepath.Join(h.work, "escape.sh")
	if err := os.WriteFile(script, []byte("touch "+outside+"/$1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.assignJudged("exec-1", "r1", shellStep("confined", "sh ./escape.sh confined; touch "+h.marker("confined")), ref, "")
	if f := result(t, rec, "confined"); f.Status != event.TaskSucceeded || !h.ran("confined") {
		t.Fatalf("confined step: %+v", f)
	}
	if _, err := os.Stat(filepath.Join(outside, "confined")); (err == nil) == confines {
		t.Fatalf("a step the policy allowed, Landlock confining: %v; its write outside the file scope: %v", confines, err)
	}
	approved := shellStep("approved", "sleep 0; sh ./escape.sh approved")
	h.assignJudged("exec-1", "r1", approved, ref, event.GateSubject(approved, ref))
	if f := result(t, rec, "approved"); f.Status != event.TaskSucceeded {
		t.Fatalf("approved step: %+v", f)
	}
	if _, err := os.Stat(filepath.Join(outside, "approved")); err != nil {
		t.Fatalf("an approved step was confined: %v", err)
	}
}

// flakySource answers no-responder for its first fails calls, then asks
// the real API.
type flakySource struct {
	real  PolicySource
	fails int64
	calls atomic.Int64
}

func (f *flakySource) PolicyVersion(ctx context.Context, v int64) (*api.PolicyVersion, error) {
	if f.calls.Add(1) <= f.fails {
		return nil, &api.NoResponderError{Subject: api.SubjectPrefix + api.MethodPolicyShow}
	}
	return f.real.PolicyVersion(ctx, v)
}

// No ledger node answering for a moment (one starting) does not refuse a
// step: the executor asks again; a definitive answer is not asked again.
func TestPolicyFetchRetriesUnanswered(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	src := &flakySource{real: APIPolicies(led.client), fails: 2}
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) { c.Safety.Policies = src })
	h.assignJudged("exec-1", "r1", shellStep("later", "touch "+h.marker("later")), led.refs[1], "")
	if f := result(t, rec, "later"); f.Status != event.TaskSucceeded || !h.ran("later") {
		t.Fatalf("step: %+v", f)
	}
	if n := src.calls.Load(); n != 3 {
		t.Errorf("asked %d times, want 3 (two unanswered, one answered)", n)
	}
	h.assignJudged("exec-1", "r1", shellStep("gone", "touch "+h.marker("gone")), event.PolicyRef{Version: 5, Hash: "sha256:00"}, "")
	h.refusedWith(t, rec, "gone", "cannot judge the step with policy version 5")
	if n := src.calls.Load(); n != 4 {
		t.Errorf("asked %d times in all, want 4 (not found is an answer)", n)
	}
}

// countingSource serves policy texts by version and counts the requests.
type countingSource struct {
	texts map[int64]string
	calls atomic.Int64
}

func (c *countingSource) PolicyVersion(_ context.Context, v int64) (*api.PolicyVersion, error) {
	c.calls.Add(1)
	return &api.PolicyVersion{PolicyRef: event.PolicyRef{Version: v}, Text: c.texts[v]}, nil
}

// The cache keeps the last policyCacheSize versions by hash: a version
// still cached is not fetched again, one pushed out is.
func TestPolicyCacheBounded(t *testing.T) {
	src := &countingSource{texts: map[int64]string{}}
	refs := map[int64]event.PolicyRef{}
	for v := int64(1); v <= policyCacheSize+1; v++ {
		text := fmt.Sprintf("name: v%d\ndefault: allow\n", v)
		p, err := policy.Parse([]byte(text), "test")
		if err != nil {
			t.Fatal(err)
		}
		src.texts[v], refs[v] = text, event.PolicyRef{Version: v, Hash: p.Hash()}
	}
	ps := newPolicies(src)
	ctx := context.Background()
	get := func(v int64) {
		t.Helper()
		p, err := ps.get(ctx, refs[v])
		if err != nil || p.Version != v || p.Hash() != refs[v].Hash {
			t.Fatalf("get(%d) = %v, %v", v, p, err)
		}
	}
	for v := int64(1); v <= policyCacheSize+1; v++ {
		get(v)
	}
	get(policyCacheSize + 1)
	get(2)
	if n := src.calls.Load(); n != policyCacheSize+1 {
		t.Fatalf("fetched %d times, want %d (cached ones not fetched again)", n, policyCacheSize+1)
	}
	get(1) // pushed out by the last one
	if n := src.calls.Load(); n != policyCacheSize+2 {
		t.Fatalf("fetched %d times, want %d (the oldest forgotten)", n, policyCacheSize+2)
	}
	if len(ps.byHash) != policyCacheSize {
		t.Fatalf("cache holds %d versions, want %d", len(ps.byHash), policyCacheSize)
	}
}

// File edits are judged again too (Policy.JudgeEdit): a denied edit never
// writes; an edit outside the file scope needs an approval of exactly it,
// and then may write its absolute path; an absolute path inside the scope
// may be written without one.
func TestFileEditsJudgedAgain(t *testing.T) {
	h := newHarness(t)
	text := testPolicy + "  - {name: no-secrets, match: {command: file.*, writes: [\"" + h.work + "/secrets/**\"]}, action: deny}\n"
	led := h.servePolicies(map[int64]string{1: text})
	ref := led.refs[1]
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) { c.Safety.Policies = APIPolicies(led.client) })

	secret := event.Step{ID: "secret", Kind: event.KindFileWrite, Path: "secrets/key", Content: "k\n"}
	h.assignJudged("exec-1", "r1", secret, ref, "")
	h.refusedWith(t, rec, "secret", "policy version 1 denies it: rule no-secrets")
	if _, err := os.Stat(filepath.Join(h.work, "secrets", "key")); err == nil {
		t.Fatal("a denied edit wrote its file")
	}

	outside, err := os.MkdirTemp("/var/tmp", "agentic-edit-*")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	far := event.Step{ID: "far", Kind: event.KindFileWrite, Path: filepath.Join(outside, "far.conf"), Content: "x\n"}
	h.assignJudged("exec-1", "r1", far, ref, "")
	h.refusedWith(t, rec, "far", "not approved for this exact command")
	if _, err := os.Stat(far.Path); err == nil {
		t.Fatal("an unapproved edit outside the scope wrote its file")
	}
	far.ID = "far-approved"
	h.assignJudged("exec-1", "r1", far, ref, event.GateSubject(far, ref))
	if f := result(t, rec, "far-approved"); f.Status != event.TaskSucceeded || readFile(t, far.Path) != "x\n" {
		t.Fatalf("approved edit: %+v", f)
	}

	inScope := event.Step{ID: "in-scope", Kind: event.KindFileWrite, Path: filepath.Join(t.TempDir(), "near.conf"), Content: "y\n"}
	h.assignJudged("exec-1", "r1", inScope, ref, "")
	if f := result(t, rec, "in-scope"); f.Status != event.TaskSucceeded || readFile(t, inScope.Path) != "y\n" {
		t.Fatalf("edit of an absolute path in the file scope: %+v", f)
	}
}

// SafetyFrom maps agentd's executor configuration; it always refuses root
// by default, and the runner options get what it sets.
func TestSafetyFrom(t *testing.T) {
	c := config.Default().Executor
	c.EnvAllow, c.RunAs, c.MaxOpenFiles, c.MaxAddressSpace, c.Landlock = []string{"PATH"}, "agentic", 256, "2GiB", true
	s := SafetyFrom(c, nil)
	if s.Policies != nil || !s.RefuseRoot || s.RunAs != "agentic" || !slices.Equal(s.EnvAllow, []string{"PATH"}) ||
		s.Limits != (runner.Limits{OpenFiles: 256, AddressSpace: 2 << 30}) || !s.Landlock {
		t.Fatalf("SafetyFrom = %+v", s)
	}
	var o runner.Options
	s.applyTo(&o)
	if !o.RefuseRoot || o.RunAs != "agentic" || o.Limits.OpenFiles != 256 || !o.Landlock || len(o.EnvAllow) != 1 {
		t.Fatalf("runner options %+v", o)
	}
	if d := SafetyFrom(config.Default().Executor, api.NewClient(nil, 0)); d.Policies == nil || !d.RefuseRoot || d.EnvAllow != nil || !d.Limits.IsZero() {
		t.Fatalf("default SafetyFrom = %+v", d)
	}
}
