package event_test

import (
	"encoding/json"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// An approval binds to the tool a tool step calls and to its arguments:
// another tool, or other arguments, give another gate subject; a step
// without them keeps the subject it had before tool steps existed.
func TestGateSubjectCoversToolAndArgs(t *testing.T) {
	ref := event.PolicyRef{Version: 1, Hash: "sha256:ab"}
	read := event.Step{ID: "w", Kind: event.KindTool, Tool: "fs/write_file", Args: json.RawMessage(`{"path":"/srv/data/a","content":"x"}`)}
	other := read
	other.Args = json.RawMessage(`{"path":"/etc/passwd","content":"x"}`)
	if event.GateSubject(read, ref) == event.GateSubject(other, ref) {
		t.Error("other arguments keep the gate subject: an approval would cover them")
	}
	tool := read
	tool.Tool = "fs/move_file"
	if event.GateSubject(read, ref) == event.GateSubject(tool, ref) {
		t.Error("another tool keeps the gate subject")
	}
	shell := event.Step{ID: "s", Kind: event.KindShell, Run: "make"}
	// Pinned before tool steps existed.
	if got, want := event.GateSubject(shell, ref), "sha256:b6697ece33d54c45e544dc4130f6c22843f6f05c0426a6e9d67721ba73e29605"; got != want {
		t.Errorf("a shell step's subject changed: %s, was %s", got, want)
	}
}
