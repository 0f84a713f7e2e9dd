package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// verifyAllOutput finds each node's row of the table.
func verifyAllRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "common seq ") || !strings.HasPrefix(lines[1], "NODE") {
		t.Fatalf("verify --all printed:\n%s", out)
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		rows[f[0]] = f[1:]
	}
	return rows
}

// ledger verify --all: two ledger nodes that folded the same stream agree;
// a third whose ledger was built from other messages does not, and the
// exit code says so.
func TestLedgerVerifyAll(t *testing.T) {
	a := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := a.Submit(t, "one.yaml", onePlan)
	a.WaitRun(t, run, 30*time.Second)
	root, err := trust.LoadRoot(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, nodetest.PeerConfig(t, a.NATSURL(), root, "b"))
	poll.Eventually(t, 30*time.Second, "node b to fold the stream", func() bool {
		ha, errA := a.API.At("test-node").LedgerHead(context.Background(), 0)
		hb, errB := a.API.At("b").LedgerHead(context.Background(), 0)
		return errA == nil && errB == nil && ha.Hash == hb.Hash
	})
	h := &history{t: t, n: a, creds: filepath.Join(a.Dir, trust.OperatorCredsFile)}

	r := h.ctl(context.Background(), nil, "ledger", "verify", "--all")
	rows := verifyAllRows(t, r.stdout)
	if r.code != 0 || len(rows) != 2 || rows["b"][2] != "yes" || rows["test-node"][2] != "yes" || rows["b"][1] != rows["test-node"][1] || !strings.Contains(r.stdout, ": 2 of 2 ledger nodes agree") {
		t.Fatalf("verify --all with two agreeing nodes = %+v", r)
	}
	type report struct {
		Agree     bool   `json:"agree"`
		CommonSeq uint64 `json:"common_seq"`
		Nodes     []struct {
			Node     string `json:"node"`
			HeadSeq  uint64 `json:"head_seq"`
			HeadHash string `json:"head_hash"`
			Hash     string `json:"hash"`
			Agrees   bool   `json:"agrees"`
		} `json:"nodes"`
	}
	r = h.ctl(context.Background(), nil, "ledger", "verify", "--all", "-o", "json")
	rep := decodeJSON[report](t, r.stdout)
	if r.code != 0 || !rep.Agree || len(rep.Nodes) != 2 || rep.CommonSeq == 0 || rep.Nodes[0].Node != "b" || rep.Nodes[0].Hash != rep.Nodes[1].Hash || len(rep.Nodes[0].Hash) != 64 {
		t.Fatalf("verify --all -o json = %+v\n%s", rep, r.stdout)
	}

	// Node c's ledger holds two records the stream never carried, signed
	// under another root; it follows the stream after them.
	cfg := nodetest.PeerConfig(t, a.NATSURL(), root, "c")
	st := ledgertest.OpenDir(t, filepath.Join(cfg.Data, "ledger"))
	kit := ledgertest.NewKit(t)
	if _, err := st.Append([]ledger.Message{
		kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "elsewhere"})),
		kit.Message(2, kit.Operator, event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "elsewhere"})),
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, cfg)

	r = h.ctl(context.Background(), nil, "ledger", "verify", "--all")
	rows = verifyAllRows(t, r.stdout)
	if r.code != ExitError || len(rows) != 3 || rows["c"][2] != "no" || rows["b"][2] != "yes" || rows["test-node"][2] != "yes" || rows["c"][1] == rows["b"][1] || !strings.Contains(r.stdout, ": 2 of 3 ledger nodes agree") {
		t.Fatalf("verify --all with a diverging node = %+v", r)
	}
	r = h.ctl(context.Background(), nil, "ledger", "verify", "--all", "-o", "json")
	rep = decodeJSON[report](t, r.stdout)
	if r.code != ExitError || rep.Agree || len(rep.Nodes) != 3 || rep.Nodes[1].Node != "c" || rep.Nodes[1].Agrees {
		t.Fatalf("verify --all -o json with a diverging node = %+v\n%s", rep, r.stdout)
	}
	t.Logf("verify --all:\n%s", h.ctl(context.Background(), nil, "ledger", "verify", "--all").stdout)
}

// With no ledger node, verify --all says so like any request does.
func TestLedgerVerifyAllWithoutNodes(t *testing.T) {
	h := newHarness(t)
	r := h.run("ledger", "verify", "--all", "--wait", "200ms")
	if r.code != ExitError || !strings.Contains(r.stderr, "no agentd node answers agentic.api.all.ledger.head") {
		t.Fatalf("verify --all without nodes = %+v", r)
	}
}
