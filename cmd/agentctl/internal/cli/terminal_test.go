package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// hostile is text a plan or a model may put in a command, a step id or
// its output: on a real terminal it erases the line it is on and goes up
// one, so that `gate show` would show "echo hello" where the command is
// rm -rf.
const hostile = "rm -rf ./zz #\x1b[2K\r\x1b[1Aecho hello"

// rawControl reports the control bytes (other than \n and \t), the C1
// controls, a bidi override and the bytes that are not UTF-8 (as U+FFFD) of
// s, which no text output may carry.
func rawControl(s string) []rune {
	var found []rune
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == 0xfffd {
			found = append(found, r)
		}
	}
	return found
}

// TestTextOutputEscapesControlBytes: control bytes from a plan or a model
// reach no text output raw: gate show prints the hostile command
// escaped, run show a step id with NUL and ESC, run logs a step's output,
// and an error its message; JSON output stays JSON.
func TestTextOutputEscapesControlBytes(t *testing.T) {
	h := newSecureHarness(t).withNode()
	g := gatedDeploy()
	g.Spec.Run, g.Verdict.Highlights = hostile, nil
	g.Subject = event.GateSubject(*g.Spec, g.Policy)
	h.withGates(g)
	evil := "step\x00\x1b]0;pwned\x07\u202e"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h.node.with(func(f *fakeNode) {
		f.runs = []api.Run{{ID: runC, Goal: "goal\x1b[8m", Status: "running", Revision: 1, CreatedAt: t0, Steps: []api.Step{
			{ID: evil, Kind: "shell", Status: "failed", Attempt: 1, Error: "exit\r\x1b[2Kfine", StartedAt: ptr(t0)},
		}}}
	})
	h.publishLog(runC, "build", 1, "stdout", "ok\x1b[2K\r\x9bdone\tnext\n")

	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"gate", "show", runC, "deploy"}, []string{`rm -rf ./zz #\x1b[2K\r\x1b[1Aecho hello`}},
		{[]string{"run", "show", runC}, []string{`step\x00\x1b]0;pwned\x07\u202e`, `goal\x1b[8m`, `exit\r\x1b[2Kfine`}},
		{[]string{"run", "list"}, []string{`goal\x1b[8m`}},
		{[]string{"run", "logs", runC, "build"}, []string{"ok\\x1b[2K\\r\\x9bdone\tnext\n"}},
	} {
		r := h.run(tt.args...)
		if r.code != 0 {
			t.Errorf("%v = %+v", tt.args, r)
			continue
		}
		if c := rawControl(r.stdout + r.stderr); len(c) > 0 {
			t.Errorf("%v printed control characters %q raw:\n%q", tt.args, c, r.stdout)
		}
		for _, want := range tt.want {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v lacks %q:\n%s", tt.args, want, r.stdout)
			}
		}
	}

	// An error naming what a model wrote is escaped on stderr too.
	r := h.run("gate", "show", runC, "no\x1b[2Kpe")
	if r.code != ExitError || len(rawControl(r.stderr)) > 0 || !strings.Contains(r.stderr, `step no\x1b[2Kpe of run`) {
		t.Errorf("error with control bytes = %+v", r)
	}

	// JSON keeps the exact text (encoding/json escapes it).
	r = h.run("run", "show", runC, "-o", "json")
	got := decodeJSON[api.Run](t, r.stdout)
	if r.code != 0 || len(got.Steps) != 1 || got.Steps[0].ID != evil {
		t.Errorf("run show -o json = %+v", r)
	}
}

// TestTermWriter: the escaping writer passes text, \n and \t, escapes
// every other control byte, C1 control and bidi override, holds a UTF-8
// sequence split across writes until it is whole, and escapes a
// sequence left incomplete when flushed.
func TestTermWriter(t *testing.T) {
	var b bytes.Buffer
	w := newTermWriter(&b, nil)
	for _, p := range []string{"héllo\tw\x00rld\n", "\xe2", "\x82\xac ", "\u0085\u202e\x7f\r", "\xff end", "\xc3"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "héllo\tw\\x00rld\n€ \\u0085\\u202e\\x7f\\r\\xff end\\xc3"
	if b.String() != want {
		t.Errorf("escaped %q, want %q", b.String(), want)
	}
	if got := escapeText(want); got != want {
		t.Errorf("escaping is not idempotent: %q", got)
	}
	// Off (JSON output): bytes pass as they are.
	b.Reset()
	w = newTermWriter(&b, func() bool { return false })
	_, _ = w.Write([]byte("a\x00\x1b"))
	if b.String() != "a\x00\x1b" {
		t.Errorf("off writer changed %q", b.String())
	}
}
