package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// foreignCreds writes an operator creds file issued by a root of its own:
// another cluster's operator.creds.
func foreignCreds(t *testing.T, id string, ttl time.Duration) (string, *trust.Root) {
	t.Helper()
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, id, trust.KindOperator, []string{event.RoleOperator}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other.creds")
	if err := natsauth.WriteOperatorCreds(path, root, op); err != nil {
		t.Fatal(err)
	}
	return path, root
}

// streamLast is the last sequence of the events stream.
func streamLast(t *testing.T, n *nodetest.Node) uint64 {
	t.Helper()
	st, err := n.JS.Stream(context.Background(), bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// TestForeignCredsFailEveryCommand: against a real node, another cluster's
// operator.creds makes every write and every read fail with exit 1 and an
// error naming both roots, and nothing reaches the stream or the ledger
// (not even a rejection). The cluster's own creds then write, which shows
// the checks would see a write.
func TestForeignCredsFailEveryCommand(t *testing.T) {
	h, n := nodeHarness(t)
	own := h.creds
	run := n.Submit(t, "one.yaml", onePlan)
	n.WaitRun(t, run, 30*time.Second)
	h.creds, _ = foreignCreds(t, "mallory", trust.OperatorCredentialTTL)
	foreign, err := trust.ReadCredsRoot(h.creds)
	if err != nil {
		t.Fatal(err)
	}
	before := streamLast(t, n)

	for _, args := range [][]string{
		{"goal", "submit", "do something"},
		{"goal", "submit", "do something", "--wait"},
		{"run", "cancel", run},
		{"memory", "put", "shared", "k", "v"},
		{"cluster", "settings", "set", "--lease-ttl", "3s"},
		{"node", "drain", "exec-b"},
		{"step", "retry", run, "build"},
		{"step", "skip", run, "build"},
		{"run", "list"},
		{"run", "show", run},
		{"audit", "tail"},
		{"memory", "ls"},
		{"node", "ls"},
		{"ledger", "verify"},
		{"cluster", "settings", "show"},
		{"version"},
	} {
		// A connection refused for its credentials is an answer, not a
		// timeout; a busy machine may still take a while to give it.
		r := h.run(append(args, "--timeout", "15s")...)
		// The cluster's NATS refuses the other cluster's NATS user before
		// anything is asked or published; the error names the root that
		// issued the file and the way to the right one.
		if r.code != ExitError || !strings.Contains(r.stderr, "refused the credentials") || !strings.Contains(r.stderr, "issued by root "+foreign.KeyID()) ||
			!strings.Contains(r.stderr, "agentctl keys operator") {
			t.Errorf("agentctl %v with another cluster's creds = %+v", args, r)
		}
	}
	if after := streamLast(t, n); after != before {
		t.Errorf("the stream went from seq %d to %d: something was published", before, after)
	}
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.Rejected) || l.Node == "mallory" {
			t.Errorf("the ledger recorded %s from %s", l.Type, l.Node)
		}
	}

	h.creds = own
	if r := h.run("memory", "put", "shared", "k", "v", "--timeout", "20s"); r.code != ExitOK || !strings.Contains(r.stdout, "published") {
		t.Fatalf("memory put with the cluster's creds = %+v", r)
	}
	if after := streamLast(t, n); after != before+1 {
		t.Errorf("the stream went from seq %d to %d, want one message more", before, after)
	}
	if r := h.run("version"); r.code != ExitOK || !strings.Contains(r.stdout, "root     "+n.Root.KeyID()) ||
		!strings.Contains(r.stdout, "(issued by root "+n.Root.KeyID()+")") {
		t.Errorf("version with the cluster's creds = %+v", r)
	}
}

// TestLedgerRefusalIsAnError: a write NATS refuses (a subject the
// operator may not publish) fails at once and says so; a write the ledger
// refuses for a reason the CLI cannot see beforehand (a second goal for a
// run) fails with the ledger's code, and exit 1.
func TestLedgerRefusalIsAnError(t *testing.T) {
	h, n := nodeHarness(t)
	a := newApp(Env{Getenv: func(string) string { return "" }})
	defer a.close()
	a.server, a.creds, a.timeout = h.url, h.creds, 20*time.Second
	// NATS refuses the subject first: an operator may not publish an
	// executor's event at all, and says so at once.
	d, err := event.NewDraft(event.TaskFinished, "run-x", event.TaskFinishedData{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.publish(context.Background(), d); err == nil || !strings.Contains(err.Error(), "may not publish") || !strings.Contains(err.Error(), "agentic.ev.task.finished") {
		t.Fatalf("publish of a subject NATS refuses = %v", err)
	}
	a.close()
	// The ledger refuses what NATS lets through: a goal for a run that
	// already has one.
	run := n.Submit(t, "one.yaml", onePlan)
	d, err = event.NewDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "again", PlanFile: onePlan, PlanName: "one.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	err = a.publish(context.Background(), d)
	var re *refusedError
	if !errors.As(err, &re) || re.code == "" ||
		!strings.Contains(err.Error(), "refused by the ledger: duplicate_run") {
		t.Fatalf("publish of a payload the ledger refuses = %v", err)
	}
	var out, errb syncBuffer
	a.env.Stdout, a.env.Stderr = &out, &errb
	if code := a.report(context.Background(), a.rootCmd(), err); code != ExitError || !strings.Contains(errb.String(), "error: refused by the ledger: "+re.code) {
		t.Errorf("report = %d %q", code, errb.String())
	}
	// The ledger holds the rejection, which is what the CLI read.
	found := false
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || (l.Type == string(event.Rejected) && strings.Contains(string(l.Data), `"code":"`+re.code+`"`))
	}
	if !found {
		t.Errorf("the ledger holds no %s rejection", re.code)
	}
}

// TestExpiredCredsFail: an expired credential is refused before anything
// is published, and says so.
func TestExpiredCredsFail(t *testing.T) {
	h := newHarness(t).withNode()
	root := h.root
	op, err := trust.NewIdentity(root, "old", trust.KindOperator, []string{event.RoleOperator}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.creds = filepath.Join(t.TempDir(), "old.creds")
	if err := natsauth.WriteOperatorCreds(h.creds, root, op); err != nil {
		t.Fatal(err)
	}
	// JWT times are whole seconds: past the expiry, by the clock.
	expired := time.Now().Add(2 * time.Second)
	poll.Eventually(t, 5*time.Second, "the credential expired", func() bool { return time.Now().After(expired) })
	r := h.run("memory", "put", "shared", "k", "v")
	if r.code != ExitError || !strings.Contains(r.stderr, "expired") {
		t.Errorf("put with an expired credential = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published with an expired credential", n)
	}
}

// TestNoLedgerAnswersIsUnconfirmed: a node says its root but no ledger
// node answers ledger.outcome: the write is published, and agentctl says
// that nothing confirmed it (exit 5), not that it succeeded.
func TestNoLedgerAnswersIsUnconfirmed(t *testing.T) {
	h := newHarness(t)
	h.withPeer(t, api.NodeInfo{ID: "exec-a", Roles: []string{event.RoleExecutor}, Root: h.root.KeyID()})
	r := h.run("memory", "put", "shared", "k", "v")
	if r.code != ExitUnconfirmed || !strings.Contains(r.stderr, "not confirmed by a ledger node: published (stream seq 1), but no ledger node answers ledger.outcome") {
		t.Errorf("put with no ledger node = %+v", r)
	}
	if r := h.run("memory", "put", "shared", "k", "v", "--no-wait-accept"); r.code != ExitOK {
		t.Errorf("put --no-wait-accept = %+v", r)
	}
}

// TestForeignCredsAgainstFakeNode: the check is the same against any node
// that says its root (here the fake), and the message names the URL.
func TestForeignCredsAgainstFakeNode(t *testing.T) {
	h := newHarness(t).withNode()
	h.creds, _ = foreignCreds(t, "mallory", time.Hour)
	r := h.run("goal", "submit", "x")
	if r.code != ExitError || !strings.Contains(r.stderr, "but the cluster at "+h.url+" trusts root "+h.root.KeyID()) ||
		!strings.Contains(r.stderr, "(nothing was published)") {
		t.Errorf("submit = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published", n)
	}
}
