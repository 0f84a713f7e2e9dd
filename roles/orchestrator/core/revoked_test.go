package core

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestRevokedExecutorsWorkMovesOn: when a node's credential is revoked,
// the ledger refuses what it signs from then on, so its running attempt
// can never finish: the leader gives it up (superseded, "node n1
// revoked") and the step runs on another executor; gossip saying the node
// is alive does not bring it back, and nothing new goes to it.
func TestRevokedExecutorsWorkMovesOn(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 2, 0)
	f.online("n2", 2, 0)
	spec := event.Step{ID: "s", Kind: event.KindShell, Run: "make", Idempotent: true}
	f.run("r", spec, event.Step{ID: "later", Kind: event.KindShell, Run: "make test", DependsOn: []string{"s"}})
	f.assign("r", spec, 1, "n1")
	f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: "s", Attempt: 1})

	f.add(event.CredentialRevoked, "", "admin", event.CredentialRevokedData{Kind: "node", ID: "n1", Before: t0, Reason: "stolen"})
	if ex := f.s.Executors["n1"]; ex.Gone != NodeRevoked {
		t.Fatalf("n1 gone = %q", ex.Gone)
	}
	// Gossip still sees the node: it stays revoked.
	f.add(event.NodeJoined, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: "n1", Incarnation: "i1", Roles: []string{"executor"}, Slots: 2})
	if ex := f.s.Executors["n1"]; ex.Gone != NodeRevoked {
		t.Fatalf("after node.joined n1 gone = %q", ex.Gone)
	}
	ds := f.decide(t0.Add(time.Second))
	var cancel event.TaskCancelData
	for _, d := range ds {
		if d.Draft.Type == event.TaskCancel {
			_ = json.Unmarshal(d.Draft.Data, &cancel)
		}
	}
	if cancel.Code != CodeSuperseded.Wire() || cancel.Node != "n1" || cancel.Reason != "node n1 revoked" {
		t.Fatalf("give-up cancel %+v in %v", cancel, ds)
	}
	ds = f.decide(t0.Add(2 * time.Second))
	var assigned event.TaskAssignedData
	for _, d := range ds {
		if d.Draft.Type == event.TaskAssigned {
			_ = json.Unmarshal(d.Draft.Data, &assigned)
		}
	}
	if assigned.Step.ID != "s" || assigned.Node != "n2" || assigned.Attempt != 2 {
		t.Fatalf("reassignment %+v in %v", assigned, ds)
	}
	// An operator's revocation, or one of an unknown node, changes nothing.
	before := f.s.Ignored
	f.add(event.CredentialRevoked, "", "admin", event.CredentialRevokedData{Kind: "operator", ID: "n2", Before: t0, Reason: "x"})
	f.add(event.CredentialRevoked, "", "admin", event.CredentialRevokedData{Kind: "node", ID: "ghost", Before: t0, Reason: "x"})
	if f.s.Ignored != before+2 || f.s.Executors["n2"].Gone != "" {
		t.Fatalf("ignored %d → %d, n2 %+v", before, f.s.Ignored, f.s.Executors["n2"])
	}
}
