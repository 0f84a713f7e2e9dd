package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// withDecisions records three answers to gates of the small run: olga's
// accept of evil through the dashboard (the ui node n1 signs for her),
// carl's deny of fetch with agentctl (he signs), and the leader closing
// report's gate when it expired.
func withDecisions(l *ledger) {
	l.change(func() {
		l.appendLine(runID, event.GateDecidedFor, event.GateDecidedForData{Operator: "olga",
			GateDecidedData: event.GateDecidedData{Step: "evil", Subject: "s1", Action: event.GateAccept, Reason: "checked <b>the path</b>"}})
		l.appendLine(runID, event.GateDecided, event.GateDecidedData{Step: "fetch", Subject: "s2", Action: event.GateDeny, Reason: "not from there"})
		l.lines[len(l.lines)-1].Node = "carl"
		l.appendLine(runID, event.GateClosed, event.GateClosedData{Step: "report", Subject: "s3", Action: event.GateSkip, Code: "gate_expired", Reason: "no answer in 1h"})
		l.lines[len(l.lines)-1].Node = "orch-1"
	})
}

// The inbox lists decided gates below the open ones: who decided, how
// (the dashboard through a ui node, agentctl, or the gate expiring), when,
// the answer and the reason, escaped; a step's panel shows its own.
func TestDecidedGatesShown(t *testing.T) {
	l := newLedger()
	smallRun(l)
	withDecisions(l)
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/gates")
	if code != http.StatusOK {
		t.Fatalf("/gates: %d", code)
	}
	i := strings.Index(body, `id="decided"`)
	if i < 0 {
		t.Fatalf("the inbox has no decided section:\n%s", body)
	}
	decided := body[i:]
	for _, want := range []string{"olga", "the dashboard (ui node n1)", "accept", "checked &lt;b&gt;the path&lt;/b&gt;",
		"carl", "agentctl", "deny", "not from there", "expired", "skip", "/events/"} {
		if !strings.Contains(decided, want) {
			t.Errorf("the decided section lacks %q", want)
		}
	}
	if strings.Index(decided, "report") > strings.Index(decided, "olga") {
		t.Error("decided gates are not newest first")
	}
	_, _, step := get(t, srv.URL+"/runs/"+runID+"/steps/evil")
	if !strings.Contains(step, "Gate decided") || !strings.Contains(step, "olga") || strings.Contains(step, "carl") {
		t.Errorf("the evil step's panel does not show olga's answer alone:\n%s", step)
	}
}
