package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

const fileRunID = "0190a3c2d4e5f6a70000000000000077"

// editRun is a run of two edit steps, a file.patch that succeeded (its
// attempt recorded the files it changed) and a file.write, both with
// attacker-written text.
func editRun(l *ledger) {
	patch := "--- a/app.go\n+++ b/app.go\n@@ -1,3 +1,3 @@\n package app\n-const v = 1\n+const v = \"<script>alert(1)</script>\"\n"
	plan := event.Plan{Steps: []event.Step{
		{ID: "bump", Kind: event.KindFilePatch, Patch: patch},
		{ID: "notes", Kind: event.KindFileWrite, Path: "NOTES.md", Content: "# Notes\n<img src=x onerror=alert(2)>\n", DependsOn: []string{"bump"}},
	}}
	steps := []api.Step{
		{ID: "bump", Kind: event.KindFilePatch, Status: "succeeded", Attempt: 1, Node: "n1", StartedAt: ptime(time.Second), FinishedAt: ptime(2 * time.Second)},
		{ID: "notes", Kind: event.KindFileWrite, Status: "pending", DependsOn: []string{"bump"}},
	}
	l.addRun(api.RunSummary{ID: fileRunID, Goal: "edit", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
	l.change(func() {
		l.appendLine(fileRunID, event.TaskFinished, event.TaskFinishedData{Step: "bump", Attempt: 1, Node: "n1", Status: event.TaskSucceeded, Started: t0.Add(time.Second),
			Edits: []event.FileEdit{{Path: "/work/app.go", Before: "sha256:aaaa", After: "sha256:bbbb", Mode: "0644"}, {Path: "/work/new.go", Before: event.FileAbsent, After: "sha256:cccc"}}})
	})
}

// An edit step's panel shows its change as a diff — removed and added
// lines marked, a file.write as a file created with every line added —
// escaped, and the files its attempts changed; the inbox shows an edit
// step's diff too.
func TestEditStepDiffs(t *testing.T) {
	l := newLedger()
	editRun(l)
	l.gates = []api.Gate{{Run: fileRunID, Step: "notes", Kind: event.GatePolicy, Subject: "s", Opened: t0,
		Spec: &event.Step{ID: "notes", Kind: event.KindFileWrite, Path: "NOTES.md", Content: "# Notes\n"}}}
	srv := newServer(t, l)
	// html/template writes "+" as "&#43;"; the tests read it back.
	plus := strings.NewReplacer("&#43;", "+")
	_, _, bump := get(t, srv.URL+"/runs/"+fileRunID+"/steps/bump")
	bump = plus.Replace(bump)
	for _, want := range []string{
		`<span class="diff-file">+++ b/app.go</span>`,
		`<span class="diff-hunk">@@ -1,3 +1,3 @@</span>`,
		`<span class="diff-del">-const v = 1</span>`,
		`<span class="diff-add">+const v = &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;</span>`,
		`/work/new.go`, `created`, `/work/app.go`, `changed`,
	} {
		if !strings.Contains(bump, want) {
			t.Errorf("the patch step's panel lacks %q", want)
		}
	}
	_, _, notes := get(t, srv.URL+"/runs/"+fileRunID+"/steps/notes?fragment=1")
	notes = plus.Replace(notes)
	for _, want := range []string{`<span class="diff-file">+++ NOTES.md</span>`, `<span class="diff-add">+# Notes</span>`, `<span class="diff-add">+&lt;img src=x onerror=alert(2)&gt;</span>`} {
		if !strings.Contains(notes, want) {
			t.Errorf("the write step's panel lacks %q:\n%s", want, notes)
		}
	}
	if code, _, inbox := get(t, srv.URL+"/gates"); code != http.StatusOK || !strings.Contains(plus.Replace(inbox), `<span class="diff-add">+# Notes</span>`) {
		t.Errorf("the inbox does not show the edit's diff (%d)", code)
	}
}
