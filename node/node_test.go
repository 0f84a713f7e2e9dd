package node_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/membership/membershiptest"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Gossip tests stop memberlist, whose last probe may outlive Stop a
	// little: membershiptest waits for it.
	membershiptest.VerifyTestMain(m,
		// nats.go's global timer pool and the pebble cache finalizers are
		// process-wide, not per node.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"),
	)
}

const onePlan = `goal: one step
steps:
  - id: hello
    run: echo hello
`

func TestRunSucceedsAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	run := n.Submit(t, "one.yaml", onePlan)
	r := n.WaitRun(t, run, 30*time.Second)
	if r.Status != event.RunSucceeded || len(r.Steps) != 1 || r.Steps[0].ExitCode == nil || *r.Steps[0].ExitCode != 0 {
		t.Fatalf("run = %+v", r)
	}
	v1, err := n.API.LedgerVerify(context.Background())
	if err != nil || !v1.OK {
		t.Fatalf("verify: %+v %v", v1, err)
	}
	n.Stop(t)

	// A restart on the same data dir restores the run from the ledger.
	n2 := nodetest.Start(t, nodetest.Config(dir))
	r2, err := n2.API.RunsGet(context.Background(), run[:8])
	if err != nil || r2.Status != event.RunSucceeded {
		t.Fatalf("after restart: %+v %v", r2, err)
	}
	v2, err := n2.API.LedgerVerify(context.Background())
	if err != nil || !v2.OK || v2.Events < v1.Events {
		t.Fatalf("verify after restart: %+v (before %+v) %v", v2, v1, err)
	}
}

// TestForgedEventsHaveNoEffect publishes raw messages on the bus that must
// all be refused: each appears in the audit as event.rejected and none
// creates a run.
func TestForgedEventsHaveNoEffect(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	ctx := context.Background()
	subj := event.Subject(event.GoalSubmitted, "")
	goal := func() event.Draft {
		return event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "forged", PlanFile: onePlan})
	}
	sign := func(id *trust.Identity, d event.Draft) []byte {
		raw, _, err := envelope.Sign(id, []event.Draft{d})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	valid := sign(n.Operator, goal())
	parts := strings.Split(string(valid), ".")

	// Tampered: same signature, run id changed in the claims.
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var m map[string]any
	_ = json.Unmarshal(claims, &m)
	m["run"] = "tampered-run"
	cb, _ := json.Marshal(m)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(cb) + "." + parts[2]

	// Unknown key: an operator of another cluster.
	otherRoot, _ := trust.NewRoot()
	stranger, _ := trust.NewIdentity(otherRoot, "operator", trust.KindOperator, []string{"operator"}, time.Hour)

	// Expired credential issued by the real root.
	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := trust.NewIdentity(root, "old-operator", trust.KindOperator, []string{"operator"}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A node of the cluster whose roles do not allow goal.submitted.
	executorOnly, _ := trust.NewIdentity(root, "exec-x", trust.KindNode, []string{event.RoleExecutor}, time.Hour)

	noneHdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"operator"}`))

	forged := []struct{ name, subject, raw string }{
		{"unsigned", subj, `{"typ":"goal.submitted","run":"x","data":{}}`},
		{"alg none", subj, noneHdr + "." + parts[1] + "."},
		{"tampered", subj, tampered},
		{"unknown key", subj, string(sign(stranger, goal()))},
		{"expired credential", subj, string(sign(expired, goal()))},
		{"role not allowed", subj, string(sign(executorOnly, goal()))},
	}
	for _, f := range forged {
		if _, err := n.JS.Publish(ctx, f.subject, []byte(f.raw)); err != nil {
			t.Fatalf("%s: publish: %v", f.name, err)
		}
	}
	// One valid goal, then a replay of its exact bytes (a fresh Nats-Msg-Id
	// gets it past the server's duplicate window, as an attacker would).
	if _, err := n.JS.Publish(ctx, subj, valid, jetstream.WithMsgID("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.JS.Publish(ctx, subj, valid, jetstream.WithMsgID("replay")); err != nil {
		t.Fatal(err)
	}
	want := len(forged) + 1
	var rejected []api.AuditLine
	poll.Eventually(t, 20*time.Second, "rejections in the audit", func() bool {
		page, err := n.API.Audit(ctx, api.AuditRequest{})
		if err != nil {
			return false
		}
		rejected = rejected[:0]
		for _, l := range page.Items {
			if l.Type == string(event.Rejected) {
				rejected = append(rejected, l)
			}
		}
		return len(rejected) >= want
	})
	if len(rejected) != want {
		t.Fatalf("%d rejections, want %d: %+v", len(rejected), want, rejected)
	}
	reasons := make([]string, len(rejected))
	for i, l := range rejected {
		b, _ := json.Marshal(l.Data)
		reasons[i] = string(b)
		if l.Subject != subj {
			t.Errorf("rejection %d subject %q", i, l.Subject)
		}
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"replayed", "may not emit", "exec-x", "credential"} {
		if !strings.Contains(all, want) {
			t.Errorf("no rejection mentions %q:\n%s", want, all)
		}
	}
	// Exactly one run exists: the valid goal's.
	poll.Eventually(t, 20*time.Second, "the valid run", func() bool {
		runs, err := n.API.RunsList(ctx, api.RunsListRequest{})
		return err == nil && len(runs.Items) == 1
	})
	runs, _ := n.API.RunsList(ctx, api.RunsListRequest{})
	if len(runs.Items) != 1 || !runs.End || runs.Items[0].Goal != "forged" {
		t.Fatalf("runs = %+v", runs)
	}
	v, err := n.API.LedgerVerify(ctx)
	if err != nil || !v.OK {
		t.Fatalf("verify: %+v %v", v, err)
	}
	_ = bus.EventsStream
}

func TestHTTPEndpoints(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	poll.Eventually(t, 20*time.Second, "readyz 200", func() bool {
		return httpGet(t, "http://"+n.HTTPAddr()+"/readyz") == 200
	})
	if code := httpGet(t, "http://"+n.HTTPAddr()+"/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code := httpGet(t, "http://"+n.HTTPAddr()+"/metrics"); code != 200 {
		t.Fatalf("metrics %d", code)
	}
	if code := httpGet(t, "http://"+n.HTTPAddr()+"/api/runs"); code != 200 {
		t.Fatalf("api/runs %d", code)
	}
	if code := httpGet(t, "http://"+n.HTTPAddr()+"/api/runs/nope"); code != 404 {
		t.Fatalf("api/runs/nope %d, want 404", code)
	}
}

// The export API, read in pages, rebuilds a ledger with the node's head.
func TestLedgerExportRebuilds(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	n.WaitRun(t, n.Submit(t, "one.yaml", onePlan), 30*time.Second)
	ctx := context.Background()
	v, err := n.API.LedgerVerify(ctx)
	if err != nil || !v.OK {
		t.Fatalf("verify: %+v %v", v, err)
	}
	// The head the node publishes (what an export starts from) may trail
	// the records verify already saw by one commit: read it after verify.
	h0, err := n.API.LedgerHead(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for l, err := range n.API.ExportLines(ctx, api.ExportRequest{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(l.Line, '\n'))
	}
	st, err := ledger.Import(t.TempDir(), strings.NewReader(b.String()), ledger.Options{})
	if err != nil {
		t.Fatalf("import the export: %v", err)
	}
	defer st.Close()
	seq, hash := st.Head()
	if seq < h0.Seq {
		t.Fatalf("imported head %d, the node's head was %d before the export", seq, h0.Seq)
	}
	at, err := n.API.LedgerHead(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(hash[:]) != at.AtHash {
		t.Fatalf("imported head hash %x, node's at %d %s", hash, seq, at.AtHash)
	}
	rep, err := st.Verify(envelope.NewVerifier(n.Root))
	if err != nil || !rep.OK {
		t.Fatalf("verify the imported ledger: %+v %v", rep, err)
	}
}
