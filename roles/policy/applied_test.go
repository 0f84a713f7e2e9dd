package policy

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestApplied(t *testing.T) {
	text := "name: small\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n"
	p, err := Parse([]byte(text), "small")
	if err != nil {
		t.Fatal(err)
	}
	d := func(base int64, source string) event.PolicyAppliedData {
		return event.PolicyAppliedData{Base: base, Name: "small", Hash: p.Hash(), Text: text, Source: source}
	}
	tests := []struct {
		name    string
		current int64
		orch    bool
		d       event.PolicyAppliedData
		want    int64 // 0: not taken
	}{
		{"first apply", 0, false, d(0, event.PolicyFromApply), 1},
		{"apply on the version in force", 4, false, d(4, event.PolicyFromApply), 5},
		{"apply on an older version", 4, false, d(3, event.PolicyFromApply), 0},
		{"apply on a newer version", 4, false, d(5, event.PolicyFromApply), 0},
		{"bootstrap into an empty history", 0, true, d(0, event.PolicyFromBootstrap), 1},
		{"bootstrap over a held policy", 1, true, d(1, event.PolicyFromBootstrap), 0},
		{"orchestrator apply over a held policy", 1, true, d(1, event.PolicyFromApply), 0},
		{"remembered rule", 1, true, d(1, event.PolicyFromRemember), 2},
		{"text that does not load", 0, false, event.PolicyAppliedData{Hash: p.Hash(), Text: "rules: [{levle: high}]", Source: event.PolicyFromApply}, 0},
		{"hash of other text", 0, false, event.PolicyAppliedData{Hash: Default().Hash(), Text: text, Source: event.PolicyFromApply}, 0},
	}
	for _, tt := range tests {
		got, err := Applied(tt.current, tt.orch, tt.d)
		switch {
		case tt.want == 0 && !errors.Is(err, ErrNotApplied):
			t.Errorf("%s: taken (%v), want ignored", tt.name, err)
		case tt.want != 0 && (err != nil || got.Version != tt.want || got.Hash() != p.Hash()):
			t.Errorf("%s: = %+v, %v; want version %d", tt.name, got, err, tt.want)
		}
	}
}

func TestSigners(t *testing.T) {
	var s Signers
	for _, ev := range []event.Event{
		{Type: event.GoalSubmitted, Node: "alice"},  // operators only
		{Type: event.AlarmRaised, Node: "exec-1"},   // any node role
		{Type: event.PolicyApplied, Node: "admin"},  // admin or orchestrator: proves nothing
		{Type: event.LeaderElected, Node: "orch-b"}, // orchestrators only
		{Type: event.TaskAssigned, Node: "orch-a"},  // orchestrators only
		{Type: event.LeaderElected, Node: "orch-b"}, // again
		{Type: event.NodeJoined, Node: "orch-b", Data: []byte(`{"node":"orch-c","roles":["orchestrator","executor"]}`)},
		{Type: event.NodeJoined, Node: "orch-b", Data: []byte(`{"node":"exec-2","roles":["executor"]}`)},
	} {
		s.Fold(ev)
	}
	for id, want := range map[string]bool{"alice": false, "exec-1": false, "exec-2": false, "admin": false, "orch-a": true, "orch-b": true, "orch-c": true} {
		if s.Orchestrator(id) != want {
			t.Errorf("Orchestrator(%s) = %v", id, !want)
		}
	}
	b, _ := json.Marshal(s)
	var back Signers
	if err := json.Unmarshal(b, &back); err != nil || len(back.Orchestrators) != 3 || !back.Orchestrator("orch-a") {
		t.Fatalf("snapshot round trip = %s → %+v, %v", b, back, err)
	}
}
