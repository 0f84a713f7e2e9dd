package event_test

import (
	"encoding/json"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// A tool step's gate subject binds the definition it was judged with:
// another hash gives another subject, no hash the step's GateSubject, and
// other kinds are never bound.
func TestToolGateSubjectBindsDefinition(t *testing.T) {
	ref := event.PolicyRef{Version: 1, Hash: "sha256:ab"}
	s := event.Step{ID: "w", Kind: event.KindTool, Tool: "fs/write_file", Args: json.RawMessage(`{"path":"/srv/a"}`)}
	a, b := event.ToolGateSubject(s, ref, "sha256:one"), event.ToolGateSubject(s, ref, "sha256:two")
	if a == b || a == event.GateSubject(s, ref) {
		t.Error("the subject does not bind the definition hash")
	}
	if event.ToolGateSubject(s, ref, "") != event.GateSubject(s, ref) {
		t.Error("without a hash the subject is not GateSubject")
	}
	shell := event.Step{ID: "s", Kind: event.KindShell, Run: "make"}
	if event.ToolGateSubject(shell, ref, "sha256:one") != event.GateSubject(shell, ref) {
		t.Error("a shell step's subject is bound to a tool hash")
	}
}
