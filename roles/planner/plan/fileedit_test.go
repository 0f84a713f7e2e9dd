package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

const editPlan = `goal: Configure and restart
steps:
  - id: conf
    kind: file.write
    path: etc/app.conf
    content: |
      port = 8080
    mode: 0600
  - id: tweak
    depends_on: [conf]
    patch: |
      --- a/etc/app.conf
      +++ b/etc/app.conf
      @@ -1 +1 @@
      -port = 8080
      +port = 9090
  - id: restart
    depends_on: [tweak]
    run: systemctl restart app
    compensate: systemctl restart app-previous
    run_as: deploy
`

func TestFileEditStepsParsed(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(editPlan))
	if err != nil {
		t.Fatal(err)
	}
	conf, tweak, restart := p.Step("conf"), p.Step("tweak"), p.Step("restart")
	if conf.Kind != event.KindFileWrite || conf.Path != "etc/app.conf" || conf.Content != "port = 8080\n" || conf.Mode != "0600" || !conf.Idempotent {
		t.Errorf("conf = %+v", conf)
	}
	if tweak.Kind != event.KindFilePatch || !strings.HasPrefix(tweak.Patch, "--- a/etc/app.conf\n") || !tweak.Idempotent {
		t.Errorf("tweak = %+v (kind inferred from patch, idempotent)", tweak)
	}
	if restart.Kind != event.KindShell || restart.Compensate != "systemctl restart app-previous" || restart.RunAs != "deploy" || restart.Idempotent {
		t.Errorf("restart = %+v", restart)
	}
	// The same plan as JSON; mode quoted.
	js := `{"goal": "Configure and restart", "steps": [
	  {"id": "conf", "kind": "file.write", "path": "etc/app.conf", "content": "port = 8080\n", "mode": "600"},
	  {"id": "tweak", "depends_on": ["conf"], "patch": "--- a/etc/app.conf\n+++ b/etc/app.conf\n@@ -1 +1 @@\n-port = 8080\n+port = 9090\n"},
	  {"id": "restart", "depends_on": ["tweak"], "run": "systemctl restart app", "compensate": "systemctl restart app-previous", "run_as": "deploy"}]}`
	q, err := Parse("plan.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q.Steps) != fmt.Sprint(p.Steps) {
		t.Errorf("JSON and YAML differ:\n%+v\n%+v", q.Steps, p.Steps)
	}
	// Normalizing again changes nothing.
	n := *p
	n.Steps = append([]event.Step(nil), p.Steps...)
	if err := Normalize(&n); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(n.Steps) != fmt.Sprint(p.Steps) {
		t.Errorf("normalize not idempotent:\n%+v\n%+v", n.Steps, p.Steps)
	}
}

func TestFileEditStepsRefused(t *testing.T) {
	big := strings.Repeat("x", MaxEditBytes+1)
	tests := []struct {
		name, src string
		w         want
	}{
		{"write without path", "steps:\n  - id: a\n    kind: file.write\n    content: hi\n", want{path: "steps[0].path", msg: "file.write step needs path"}},
		{"write escaping cwd", "steps:\n  - id: a\n    path: sub/../../x\n", want{path: "steps[0].path", msg: "leaves cwd"}},
		{"patch escaping cwd", "steps:\n  - id: a\n    patch: \"--- a/../x\\n+++ b/../x\\n@@ -1 +1 @@\\n-a\\n+b\\n\"\n", want{path: "steps[0].patch", msg: "leaves cwd"}},
		{"write blank path", "steps:\n  - id: a\n    kind: file.write\n    path: ' '\n", want{path: "steps[0].path", msg: "path is empty"}},
		{"bad mode", "steps:\n  - id: a\n    path: f\n    content: x\n    mode: 0999\n", want{path: "steps[0].mode", msg: `mode "0999"`}},
		{"mode list", "steps:\n  - id: a\n    path: f\n    mode: [1]\n", want{path: "steps[0].mode", msg: "mode must be octal"}},
		{"write and patch", "steps:\n  - id: a\n    kind: file.write\n    path: f\n    patch: x\n", want{path: "steps[0].patch", msg: "not both"}},
		{"write with run", "steps:\n  - id: a\n    kind: file.write\n    path: f\n    run: echo\n", want{path: "steps[0].run", msg: "not both"}},
		{"write with guard", "steps:\n  - id: a\n    path: f\n    creates: f\n", want{path: "steps[0].creates", msg: "need no guard"}},
		{"content too large", "steps:\n  - id: a\n    path: f\n    content: " + big + "\n", want{path: "steps[0].content", msg: "the limit is"}},
		{"patch without patch", "steps:\n  - id: a\n    kind: file.patch\n", want{path: "steps[0].patch", msg: "file.patch step needs patch"}},
		{"patch does not parse", "steps:\n  - id: a\n    patch: please fix the config\n", want{path: "steps[0].patch", msg: "patch names no file"}},
		{"patch bad hunk", "steps:\n  - id: a\n    patch: \"--- a/f\\n+++ b/f\\n@@ -1,x +1 @@\\n-a\\n+b\\n\"\n", want{path: "steps[0].patch", msg: "patch does not parse"}},
		{"patch with path", "steps:\n  - id: a\n    kind: file.patch\n    path: f\n    patch: \"--- a/f\\n+++ b/f\\n@@ -1 +1 @@\\n-a\\n+b\\n\"\n", want{path: "steps[0].path", msg: "names its files itself"}},
		{"shell with content", "steps:\n  - id: a\n    run: echo\n    content: x\n", want{path: "steps[0].content", msg: "belongs to file edits"}},
		{"restore kind", "steps:\n  - id: a\n    kind: file.restore\n", want{path: "steps[0].kind", msg: "not for plans"}},
		{"compensate on edit", "steps:\n  - id: a\n    path: f\n    compensate: rm f\n", want{path: "steps[0].compensate", msg: "before-images"}},
		{"compensate on noop", "steps:\n  - id: a\n    kind: noop\n    compensate: echo\n", want{path: "steps[0].compensate", msg: "only shell steps"}},
		{"blank compensate", "steps:\n  - id: a\n    run: echo\n    compensate: ''\n", want{path: "steps[0].compensate", msg: "compensate is empty"}},
		{"bad run_as", "steps:\n  - id: a\n    run: echo\n    run_as: 'root; rm'\n", want{path: "steps[0].run_as", msg: "not a user name"}},
		{"run_as on edit", "steps:\n  - id: a\n    path: f\n    run_as: deploy\n", want{path: "steps[0].run_as", msg: "only shell steps"}},
		{"secret in content", "steps:\n  - id: a\n    path: f\n    content: 'password=hunter2hunter2'\n", want{path: "steps[0].content", msg: "looks like a secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(tc.src))
			requireProblems(t, err, tc.w)
		})
	}
	// Several steps under the per-step limit that do not fit one event
	// together.
	var b strings.Builder
	b.WriteString("steps:\n")
	chunk := strings.Repeat("y", MaxEditBytes-10)
	for i := range 3 {
		fmt.Fprintf(&b, "  - id: w%d\n    path: f%d\n    content: %s\n", i, i, chunk)
	}
	_, err := Parse("plan.yaml", []byte(b.String()))
	requireProblems(t, err, want{msg: "split it into several plans"})
}

// A plan built in code gets the same checks.
func TestFileEditCodeBuiltPlan(t *testing.T) {
	err := Normalize(&event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindFileWrite, Content: "x"}}})
	requireProblems(t, err, want{path: "steps[0].path", msg: "file.write step needs path"})
	p := &event.Plan{Steps: []event.Step{{ID: "a", Path: "f", Content: "x", Mode: "755"}}}
	if err := Normalize(p); err != nil {
		t.Fatal(err)
	}
	if s := p.Steps[0]; s.Kind != event.KindFileWrite || s.Mode != "0755" || !s.Idempotent {
		t.Fatalf("step %+v", s)
	}
}
