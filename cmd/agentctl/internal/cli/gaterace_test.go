package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// streamAudit is the audit the fake node answers when streamAudit is set:
// every event of the real stream that verifies, in stream order, as a
// ledger node records them (the fake folds the whole stream at once).
func (f *fakeNode) streamAuditLines(ctx context.Context) ([]api.AuditLine, error) {
	st, err := f.ledger.Stream(ctx, bus.EventsStream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	v := envelope.NewVerifier(f.root)
	var lines []api.AuditLine
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			return nil, err
		}
		env, err := v.Verify(m.Data, m.Subject, m.Time)
		if err != nil {
			continue
		}
		for _, ev := range env.Events {
			lines = append(lines, api.AuditLine{Seq: uint64(len(lines) + 1), Subject: m.Subject, Type: string(ev.Type), Run: ev.Run,
				Node: ev.Node, Time: ev.Time, Data: ev.Data, StreamSeq: seq, StreamTime: m.Time})
		}
	}
	return lines, nil
}

// publishAs signs and publishes one event as id, as another operator or
// a node would.
func (h *harness) publishAs(id *trust.Identity, typ event.Type, run string, data any) {
	h.t.Helper()
	d, err := event.NewDraft(typ, run, data)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, h.conn.JS, id, d); err != nil {
		h.t.Fatalf("publish %s as %s: %v", typ, id.ID, err)
	}
}

// TestGateRaceLoser: two operators answer one gate at once; the leader
// folds the first answer the ledger holds and ignores the other. The
// loser is told, with a non-zero exit, which answer won and who gave it;
// the winner, that theirs was recorded. An approval that does not close
// a gate needing two is not a loss; an answer after the gate expired is.
func TestGateRaceLoser(t *testing.T) {
	h, ids := secureHarness(t)
	h.withNode()
	h.node.with(func(f *fakeNode) { f.streamAudit = true })
	orch := ids.Node(t, "node-o", event.RoleOrchestrator)
	bob := ids.Node(t, "bob", event.RoleOperator)

	deploy := gatedDeploy()
	deploy.Approvals, deploy.Approvers = 1, nil
	cleanup := gatedDeploy()
	cleanup.Step, cleanup.Spec = "cleanup", &event.Step{ID: "cleanup", Kind: event.KindShell, Run: "rm -rf ./tmp"}
	cleanup.Subject, cleanup.Approvers = event.GateSubject(*cleanup.Spec, cleanup.Policy), nil
	expiring := gatedDeploy()
	expiring.Step, expiring.Spec = "prune", &event.Step{ID: "prune", Kind: event.KindShell, Run: "rm -rf ./old"}
	expiring.Subject, expiring.Approvers = event.GateSubject(*expiring.Spec, expiring.Policy), nil
	h.withGates(deploy, cleanup, expiring)
	for _, g := range []api.Gate{deploy, cleanup, expiring} {
		h.publishAs(orch, event.GateOpened, runC, event.GateOpenedData{Step: g.Step, Kind: g.Kind, Subject: g.Subject, Approvals: g.Approvals})
	}

	// bob's deny reaches the ledger first; alice's approve loses.
	h.publishAs(bob, event.GateDecided, runC, event.GateDecidedData{Step: "deploy", Subject: deploy.Subject, Action: event.GateDeny, Reason: "not in the freeze"})
	r := h.run("gate", "approve", runC, "deploy")
	if r.code != ExitError || strings.Contains(r.stdout, "recorded") ||
		!strings.Contains(r.stderr, "error: deny of step deploy of run "+runC+" by bob came first") ||
		!strings.Contains(r.stderr, `reason "not in the freeze"`) || !strings.Contains(r.stderr, "your accept counts for nothing") {
		t.Errorf("the loser of the race = %+v", r)
	}
	// The same with -o json: the error, and nothing on stdout.
	r = h.run("gate", "skip", runC, "deploy", "--reason", "late", "-o", "json")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, "by bob came first") {
		t.Errorf("the loser of the race, -o json = %+v", r)
	}

	// cleanup needs two approvals: bob's first does not close it, and
	// alice's makes the second.
	h.publishAs(bob, event.GateDecided, runC, event.GateDecidedData{Step: "cleanup", Subject: cleanup.Subject, Action: event.GateAccept})
	if r := h.run("gate", "approve", runC, "cleanup"); r.code != 0 || !strings.Contains(r.stdout, "accept of step cleanup of run "+runC+" recorded") {
		t.Errorf("the second of two approvals = %+v", r)
	}

	// The gate of prune expired (the leader closed it) before alice's deny.
	h.publishAs(orch, event.GateClosed, runC, event.GateClosedData{Step: "prune", Subject: expiring.Subject, Action: event.GateSkip, Code: "gate_expired", Reason: "nobody answered in 1h"})
	r = h.run("gate", "deny", runC, "prune", "--reason", "no")
	if r.code != ExitError || !strings.Contains(r.stderr, "the gate of step prune of run "+runC+" closed first, unanswered (skip, gate_expired: nobody answered in 1h; ledger seq") {
		t.Errorf("an answer after the gate closed = %+v", r)
	}
}

// TestGateRaceRealNode: the race against a real node (ledger, run index,
// orchestrator, audit): alice reads the gate open, bob's deny reaches the
// stream before her approval, and she is told that bob's deny won; the
// step is denied, and ran not.
func TestGateRaceRealNode(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("name: gatekeeper\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "marker")
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Policy = policyFile
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	bobCreds := filepath.Join(dir, "bob.creds")
	if r := h.run("keys", "operator", "bob", "--root", n.Dir, "--out", bobCreds); r.code != 0 {
		t.Fatalf("keys operator bob = %+v", r)
	}
	bob, _, err := trust.ReadCreds(bobCreds)
	if err != nil {
		t.Fatal(err)
	}
	run := n.Submit(t, "wipe.yaml", "goal: wipe\nsteps:\n  - id: wipe\n    run: \"echo ran >> "+marker+" && rm -rf ./build\"\n")
	ctx := context.Background()
	var g api.Gate
	poll.Eventually(t, 30*time.Second, "the step's gate is listed", func() bool {
		gs, err := n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		if err == nil && len(gs) == 1 {
			g = gs[0]
		}
		return err == nil && len(gs) == 1
	})

	old := beforeAnswer
	t.Cleanup(func() { beforeAnswer = old })
	beforeAnswer = func(*api.Gate) {
		d := event.MustDraft(event.GateDecided, run, event.GateDecidedData{Step: "wipe", Subject: g.Subject, Action: event.GateDeny, Reason: "not today"})
		if err := bus.PublishSigned(ctx, n.JS, bob, d); err != nil {
			t.Error(err)
		}
	}
	r := h.run("gate", "approve", run[len(run)-6:], "wipe")
	if r.code != ExitError || !strings.Contains(r.stderr, "error: deny of step wipe of run "+run+" by bob came first") ||
		!strings.Contains(r.stderr, `reason "not today"`) {
		t.Errorf("the loser against a real node = %+v", r)
	}
	beforeAnswer = old

	s := n.WaitRun(t, run, 30*time.Second)
	if s.Status != event.RunFailed || len(s.Steps) != 1 || s.Steps[0].Code != "gate_denied" {
		t.Errorf("run %s: %s, steps %+v", run, s.Status, s.Steps)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the denied step ran (%v)", err)
	}
}
