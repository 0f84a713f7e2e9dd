package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// The rename scenario: a goal "rename function Hello to Greet across this
// Go module and keep the tests green" on a small module the test makes. A
// scripted model (a chat-completions server) plans a file.patch renaming
// the definition and `go test ./...`; the call site in caller.go is left
// unrenamed, so the tests do not compile and the planner is asked to
// replan with the failure.

// renameModule is the module before the rename: Hello is defined in
// greet.go and called from caller.go; the test calls Welcome only, so the
// rename needs no edit of it.
var renameModule = map[string]string{
	"go.mod":        "module example.com/greet\n\ngo 1.22\n",
	"greet.go":      "package greet\n\n// Hello greets name.\nfunc Hello(name string) string {\n\treturn \"hello \" + name\n}\n",
	"caller.go":     "package greet\n\n// Welcome greets the world.\nfunc Welcome() string {\n\treturn Hello(\"world\")\n}\n",
	"greet_test.go": "package greet\n\nimport \"testing\"\n\nfunc TestWelcome(t *testing.T) {\n\tif got := Welcome(); got != \"hello world\" {\n\t\tt.Fatalf(\"Welcome() = %q\", got)\n\t}\n}\n",
}

// renamedCaller is caller.go once its call site is renamed.
const renamedCaller = "package greet\n\n// Welcome greets the world.\nfunc Welcome() string {\n\treturn Greet(\"world\")\n}\n"

// renameDefPatch renames the definition in greet.go (a file.patch, paths
// relative to the module: the step's cwd).
const renameDefPatch = "--- a/greet.go\n+++ b/greet.go\n@@ -1,6 +1,6 @@\n package greet\n \n-// Hello greets name.\n-func Hello(name string) string {\n+// Greet greets name.\n+func Greet(name string) string {\n \treturn \"hello \" + name\n }\n"

// writeModule makes the module in a new temp dir and returns it.
func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range renameModule {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hashTree maps every file under dir (relative name) to its sha256 and
// mode: what "byte-identical" compares.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:]) + " " + fi.Mode().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renamePlans are the scripted model's answers for the module in dir: the
// first plan (the call site forgotten) and the revision that fixes it
// (the step done kept unchanged, the call site renamed, the test again).
// The test step runs offline: no proxy, no toolchain switch, the test's
// build cache (shared, so the standard library is not compiled again)
// and a GOPATH of its own outside the module.
func renamePlans(t *testing.T, dir, goBin, gocache string) (first, fixed string) {
	t.Helper()
	env := map[string]string{
		"GOCACHE": gocache, "GOPATH": filepath.Join(t.TempDir(), "gopath"), "GOFLAGS": "-mod=mod",
		"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOENV": "off", "CGO_ENABLED": "0",
	}
	def := map[string]any{"id": "rename-def", "title": "rename the definition of Hello", "kind": "file.patch", "cwd": dir, "patch": renameDefPatch}
	test := func(deps ...string) map[string]any {
		return map[string]any{"id": "test", "title": "the module's tests", "run": goBin + " test ./...", "cwd": dir, "env": env,
			"timeout": "2m", "depends_on": deps}
	}
	b, err := json.Marshal(map[string]any{"steps": []any{def, test("rename-def")}})
	if err != nil {
		t.Fatal(err)
	}
	first = "```json\n" + string(b) + "\n```"
	b, err = json.Marshal(map[string]any{"rationale": "caller.go still calls Hello: rename its call site too",
		"steps": []any{def,
			map[string]any{"id": "rename-call", "title": "rename the call site in caller.go", "kind": "file.write", "cwd": dir,
				"path": "caller.go", "content": renamedCaller, "depends_on": []string{"rename-def"}},
			test("rename-def", "rename-call")}})
	if err != nil {
		t.Fatal(err)
	}
	return first, string(b)
}

// TestRenameAcrossModule is the planner's end-to-end scenario, on one
// agentd process driven by agentctl: a model that fixes the failure on
// replan (the run succeeds, the rename is in place, replay reports no
// divergence), and a model that never does (the replans run out and every
// file edit is compensated: the module is byte-identical to before).
func TestRenameAcrossModule(t *testing.T) {
	requireE2E(t)
	// go test puts its own go command first on PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command that runs this test is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	gocache := strings.TrimSpace(string(out))
	if err != nil || gocache == "" || gocache == "off" {
		// Nothing to share: the steps build in a cache of their own.
		gocache = filepath.Join(t.TempDir(), "gocache")
		if err := os.MkdirAll(gocache, 0o777); err != nil {
			t.Fatal(err)
		}
	}

	fixes, never, switches := writeModule(t), writeModule(t), writeModule(t)
	fixFirst, fixRevised := renamePlans(t, fixes, goBin, gocache)
	neverFirst, _ := renamePlans(t, never, goBin, gocache)
	switchFirst, _ := renamePlans(t, switches, goBin, gocache)
	switchRevised := rewritePlan(t, switches, switchFirst)
	var mu sync.Mutex
	calls := map[string][]string{} // module dir -> the prompts about it
	srv := llmtest.Server(t, func(prompt string) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(prompt, fixes):
			calls[fixes] = append(calls[fixes], prompt)
			if strings.Contains(prompt, "a step failed") {
				return fixRevised
			}
			return fixFirst
		case strings.Contains(prompt, never):
			calls[never] = append(calls[never], prompt)
			return neverFirst
		case strings.Contains(prompt, switches):
			calls[switches] = append(calls[switches], prompt)
			if strings.Contains(prompt, "a step failed") {
				return switchRevised
			}
			return switchFirst
		}
		return "I do not know that module."
	})
	a := startAgentd(t, "--planner-base-url", srv.URL+"/v1", "--planner-model", "test-model")
	goal := func(dir string) string {
		return "Rename function Hello to Greet across the Go module in " + dir + " and keep the tests green"
	}

	t.Run("fixed on replan", func(t *testing.T) {
		before := hashTree(t, fixes)
		res := a.ctl("goal", "submit", "--wait", goal(fixes))
		if res.code != 0 {
			t.Fatalf("goal submit --wait: %s\nlog:\n%s", res, a.logTail(40))
		}
		run := runOf(t, a, fixes)
		v := a.runShow(run)
		if v.Status != "succeeded" || v.Revision != 2 {
			t.Fatalf("want the run succeeded at revision 2:\n%s", v.dump())
		}
		for _, id := range []string{"rename-def", "rename-call", "test"} {
			if s := v.step(t, id); s.Status != "succeeded" {
				t.Errorf("step %s: %s", id, s.Status)
			}
		}
		// The edits are in place: the rename, and nothing else changed.
		after := hashTree(t, fixes)
		for _, name := range []string{"go.mod", "greet_test.go"} {
			if after[name] != before[name] {
				t.Errorf("%s changed", name)
			}
		}
		if len(after) != len(before) {
			t.Errorf("files before %v, after %v", before, after)
		}
		if b, _ := os.ReadFile(filepath.Join(fixes, "greet.go")); !strings.Contains(string(b), "func Greet(name string) string") || strings.Contains(string(b), "Hello") {
			t.Errorf("greet.go not renamed:\n%s", b)
		}
		if b, _ := os.ReadFile(filepath.Join(fixes, "caller.go")); string(b) != renamedCaller {
			t.Errorf("caller.go:\n%s", b)
		}

		// The failure reached the model: the compiler's complaint about
		// the call site, and the step done named as done.
		mu.Lock()
		prompts := append([]string(nil), calls[fixes]...)
		mu.Unlock()
		if len(prompts) != 2 || !strings.Contains(prompts[1], "Failed step: test (attempt 1)") || !strings.Contains(prompts[1], "undefined: Hello") ||
			!strings.Contains(prompts[1], "Steps done (they will not run again if the revised plan keeps them unchanged): rename-def") {
			t.Fatalf("%d model calls; the last prompt:\n%s", len(prompts), prompts[len(prompts)-1])
		}
		// The definition's edit ran once: revision 2 kept it unchanged.
		lines := a.audit("--run", run)
		if n := len(taskFinished(t, lines, run, "rename-def")); n != 1 {
			t.Errorf("rename-def finished %d times, want 1", n)
		}
		if f := taskFinished(t, lines, run, "test"); len(f) != 2 || f[0].Status != "failed" || f[1].Status != "succeeded" {
			t.Errorf("test finished %+v, want failed then succeeded", f)
		}

		// As a user would check it: replay decides the same, plan diff
		// shows the revision.
		if rep := replayRun(t, a, run); len(rep.Divergences) != 0 || rep.Finished != "succeeded" || rep.Reproduced == 0 || rep.Reproduced != rep.Checked {
			t.Fatalf("run replay = %+v", rep)
		}
		res = a.ctl("plan", "diff", run, "1", "2")
		for _, s := range []string{"1 added, 0 removed, 1 changed, 1 unchanged", "rationale: caller.go still calls Hello", "+ rename-call", "~ test"} {
			if res.code != 0 || !strings.Contains(res.stdout, s) {
				t.Errorf("plan diff lacks %q: %s", s, res)
			}
		}
	})

	t.Run("never fixed", func(t *testing.T) {
		before := hashTree(t, never)
		res := a.ctl("goal", "submit", "--wait", goal(never))
		if res.code == 0 {
			t.Fatalf("goal submit --wait: want a failed run, got %s", res)
		}
		run := runOf(t, a, never)
		v := a.waitRun(run, 2*time.Minute)
		if v.Status != "failed" || !strings.Contains(v.Reason, "the replans budget (3) is spent") {
			t.Fatalf("want the run failed with its replans spent:\n%s", v.dump())
		}
		mu.Lock()
		n := len(calls[never])
		mu.Unlock()
		if n != 4 {
			t.Errorf("%d model calls, want 4 (a plan and 3 replans)", n)
		}
		// Every file edit was compensated: the module is as before, byte
		// for byte, and the ledger says so.
		if after := hashTree(t, never); !equalTrees(before, after) {
			t.Fatalf("the module changed:\nbefore %v\nafter  %v", before, after)
		}
		if !strings.HasSuffix(v.Reason, "compensated: rename-def") {
			t.Errorf("reason %q does not name the compensated edit", v.Reason)
		}
		if f := taskFinished(t, a.audit("--run", run), run, "rename-def.undo"); len(f) != 1 || f[0].Status != "succeeded" {
			t.Errorf("compensation of rename-def: %+v", f)
		}
		rep := replayRun(t, a, run)
		if len(rep.Divergences) != 0 || rep.Finished != "failed" {
			t.Errorf("run replay: %+v", rep)
		}
	})

	// Revision 2 drops the edit done (rename-def) for another
	// (rewrite-def): both are undone when the replans run out, the later
	// first.
	t.Run("never fixed, edit dropped by a revision", func(t *testing.T) {
		before := hashTree(t, switches)
		if res := a.ctl("goal", "submit", "--wait", goal(switches)); res.code == 0 {
			t.Fatalf("goal submit --wait: want a failed run, got %s", res)
		}
		run := runOf(t, a, switches)
		v := a.waitRun(run, 2*time.Minute)
		if v.Status != "failed" || !strings.HasSuffix(v.Reason, "compensated: rewrite-def, rename-def") {
			t.Fatalf("want the run failed, both edits compensated:\n%s", v.dump())
		}
		if _, ok := v.lookup("rename-def"); ok {
			t.Errorf("rename-def shown in the plan of revision %d:\n%s", v.Revision, v.dump())
		}
		if after := hashTree(t, switches); !equalTrees(before, after) {
			t.Fatalf("the module changed:\nbefore %v\nafter  %v", before, after)
		}
		if rep := replayRun(t, a, run); len(rep.Divergences) != 0 {
			t.Errorf("run replay: %+v", rep)
		}
	})
}

// replayReport is the documented run replay -o json object, the fields
// the tests look at.
type replayReport struct {
	Checked     int               `json:"checked"`
	Reproduced  int               `json:"reproduced"`
	Finished    string            `json:"finished"`
	Divergences []json.RawMessage `json:"divergences"`
}

// replayRun runs agentctl run replay RUN -o json and decodes its report.
func replayRun(t *testing.T, a *agentd, run string) replayReport {
	t.Helper()
	res := a.ctl("run", "replay", run, "-o", "json")
	var rep replayReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 {
		t.Fatalf("run replay: %v\n%s", err, res)
	}
	return rep
}

// rewritePlan is a revision of first that drops its file.patch step
// (done) for a file.write of the whole of greet.go, renamed with another
// comment, and still forgets the call site.
func rewritePlan(t *testing.T, dir, first string) string {
	t.Helper()
	var p struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(first, "```json\n"), "\n```")), &p); err != nil {
		t.Fatal(err)
	}
	test := p.Steps[1]
	test["depends_on"] = []string{"rewrite-def"}
	b, err := json.Marshal(map[string]any{"rationale": "write greet.go whole instead", "steps": []any{
		map[string]any{"id": "rewrite-def", "kind": "file.write", "cwd": dir, "path": "greet.go",
			"content": "package greet\n\n// Greet says hello to name.\nfunc Greet(name string) string {\n\treturn \"hello \" + name\n}\n"},
		test}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// equalTrees reports whether two hashTree results are the same.
func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// runOf is the id of the one run whose goal names dir.
func runOf(t *testing.T, a *agentd, dir string) string {
	t.Helper()
	var sums []runSummary
	if err := json.Unmarshal([]byte(a.mustCtl("run", "list", "-o", "json")), &sums); err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if strings.Contains(s.Goal, dir) {
			return s.ID
		}
	}
	t.Fatalf("no run for %s in %+v", dir, sums)
	return ""
}
