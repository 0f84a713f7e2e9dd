package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/policy"
)

// judgeFixture is an executor (not started: vet needs no bus) judging
// with the policy texts of src, working in work.
func judgeFixture(t testing.TB, src *countingSource, work string) *Executor {
	t.Helper()
	return New(roles.Env{Node: "exec-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{
		Runner: runner.Options{DefaultCwd: work},
		Safety: Safety{Policies: src},
	})
}

// policyRefs loads texts into a countingSource and returns the refs an
// assignment would name.
func policyRefs(t testing.TB, texts map[int64]string) (*countingSource, map[int64]event.PolicyRef) {
	t.Helper()
	src := &countingSource{texts: texts}
	refs := map[int64]event.PolicyRef{}
	for v, text := range texts {
		p, err := policy.Parse([]byte(text), "test")
		if err != nil {
			t.Fatal(err)
		}
		refs[v] = event.PolicyRef{Version: v, Hash: p.Hash()}
	}
	return src, refs
}

func vetOutcome(t testing.TB, e *Executor, a event.TaskAssignedData) string {
	t.Helper()
	j, err := e.vet(context.Background(), a)
	if err != nil {
		return "refused: " + err.Error()
	}
	var hash string
	if j.p != nil {
		hash = j.p.Hash()
	}
	return fmt.Sprintf("ok policy=%s approved=%v dir=%s scope=%v", hash, j.approved, j.dir, j.writeScope())
}

// A step judged under one policy version is judged again under another:
// the cached judgement of the same command is never reused with a changed
// policy (another text, so another hash), nor with another version of the
// same text, nor in another working directory.
func TestJudgementCacheNeverStale(t *testing.T) {
	work := t.TempDir()
	outside := t.TempDir()
	allow := "name: a\ndefault: allow\nscopes: {files: [\"./**\"]}\n"
	deny := allow + "rules:\n  - {name: no-frob, pattern: \"frob\", action: deny}\n"
	src, refs := policyRefs(t, map[int64]string{1: allow, 2: deny, 3: allow})
	e := judgeFixture(t, src, work)
	step := shellStep("s", "frob --now")
	assign := func(v int64, s event.Step) event.TaskAssignedData {
		return event.TaskAssignedData{Attempt: 1, Node: "exec-1", Step: s, Policy: refs[v]}
	}
	for round := range 3 {
		if got := vetOutcome(t, e, assign(1, step)); got[:2] != "ok" {
			t.Fatalf("round %d, version 1 allows frob: %s", round, got)
		}
		if got, want := vetOutcome(t, e, assign(2, step)), "refused: refused by the executor: policy version 2 denies it: rule no-frob"; len(got) < len(want) || got[:len(want)] != want {
			t.Fatalf("round %d, version 2 denies frob: %s", round, got)
		}
		if got := vetOutcome(t, e, assign(3, step)); got[:2] != "ok" {
			t.Fatalf("round %d, version 3 allows frob: %s", round, got)
		}
		far := step
		far.Cwd = outside
		if got, want := vetOutcome(t, e, assign(1, far)), "refused: refused by the executor: working directory "+outside+" lies outside"; len(got) < len(want) || got[:len(want)] != want {
			t.Fatalf("round %d, cwd outside the scope: %s", round, got)
		}
	}
	if n := len(e.judged.m); n != 4 {
		t.Fatalf("cache holds %d judgements, want 4 (one per version and directory)", n)
	}
}

// Differential: vet answers the same with its cache as an executor that
// judges every step afresh, for steps that differ in each field the
// judgement may read, asked in several orders.
func TestJudgementCacheSameAnswers(t *testing.T) {
	work := t.TempDir()
	sub := filepath.Join(work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	src, refs := policyRefs(t, map[int64]string{1: testPolicy, 2: "name: b\ndefault: confirm\nrules:\n  - {name: ok-true, pattern: \"true\", action: allow}\n"})
	var steps []event.Step
	for _, run := range []string{"true", "shred --version", "sleep 0", "touch /etc/x", "echo $(sleep 1)", "cd / && rm -rf x", "true # c"} {
		for i, mod := range []func(*event.Step){
			func(*event.Step) {},
			func(s *event.Step) { s.Check = "shred --version" },
			func(s *event.Step) { s.Check = "true" },
			func(s *event.Step) { s.Env = map[string]string{"LD_PRELOAD": "/x.so"} },
			func(s *event.Step) { s.Env = map[string]string{"FOO": "1"} },
			func(s *event.Step) { s.Cwd = "sub" },
			func(s *event.Step) { s.Cwd = "/" },
			func(s *event.Step) { s.Cwd = "missing" },
		} {
			s := shellStep(fmt.Sprintf("s%d", i), run)
			mod(&s)
			steps = append(steps, s)
		}
	}
	steps = append(steps, event.Step{ID: "w", Kind: event.KindFileWrite, Path: "a", Content: "x"},
		event.Step{ID: "noop", Kind: event.KindNoop})
	cached := judgeFixture(t, src, work)
	for pass := range 3 {
		for i := range steps {
			s := steps[(i*7+pass*3)%len(steps)]
			for _, v := range []int64{1, 2} {
				for _, approved := range []string{"", event.GateSubject(s, refs[v])} {
					a := event.TaskAssignedData{Attempt: 1, Node: "exec-1", Step: s, Policy: refs[v], Approved: approved}
					got := vetOutcome(t, cached, a)
					want := vetOutcome(t, judgeFixture(t, src, work), a)
					if got != want {
						t.Fatalf("pass %d, step %+v, version %d, approved %q:\ncached %s\nfresh  %s", pass, s, v, approved, got, want)
					}
				}
			}
		}
	}
	if len(cached.judged.m) == 0 {
		t.Fatal("nothing was cached")
	}
}

// The cache is bounded.
func TestJudgementCacheBounded(t *testing.T) {
	src, refs := policyRefs(t, map[int64]string{1: testPolicy})
	e := judgeFixture(t, src, t.TempDir())
	for i := range judgeCacheSize + 50 {
		a := event.TaskAssignedData{Attempt: 1, Node: "exec-1", Step: shellStep("s", fmt.Sprintf("echo %d", i)), Policy: refs[1]}
		if got := vetOutcome(t, e, a); got[:2] != "ok" {
			t.Fatal(got)
		}
	}
	if n := len(e.judged.m); n != judgeCacheSize {
		t.Fatalf("cache holds %d judgements, want %d", n, judgeCacheSize)
	}
	big := shellStep("big", "echo "+string(make([]byte, judgeCacheMaxKey)))
	if _, ok := judgeKeyOf(nil, big, "", ""); ok {
		t.Fatal("a step larger than judgeCacheMaxKey is cached")
	}
}

// BenchmarkVet is vet of a shell step `true` under a policy with a file
// scope (the policy loaded): parsing and judging it, or the judgement
// kept.
func BenchmarkVet(b *testing.B) {
	src, refs := policyRefs(b, map[int64]string{1: testPolicy})
	e := judgeFixture(b, src, b.TempDir())
	a := event.TaskAssignedData{Attempt: 1, Node: "exec-1", Step: shellStep("s", "true"), Policy: refs[1]}
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.vet(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
