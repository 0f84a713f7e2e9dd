package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/bootstrap"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go/jetstream"
)

// logs collects a node's log lines for a test to read.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// has fails t unless the logs hold every one of parts on one line.
func (l *logs) has(t *testing.T, parts ...string) {
	t.Helper()
	for line := range strings.Lines(l.String()) {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return
		}
	}
	t.Errorf("no log line with %q; logs:\n%s", parts, l.String())
}

// trimStream makes the events stream drop all but its last keep messages,
// as retention does, and returns its first sequence then. The limit is
// lifted again, so that nothing more is dropped.
func trimStream(t *testing.T, js jetstream.JetStream, keep int64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxMsgs = keep
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("limit the stream to %d messages: %v", keep, err)
	}
	cfg.MaxMsgs = -1
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq <= 1 {
		t.Fatalf("the stream still starts at %d after trimming to %d messages", info.State.FirstSeq, keep)
	}
	return info.State.FirstSeq
}

// head is node's ledger head, asked of that node alone.
func head(t *testing.T, c *api.Client, node string) api.LedgerHead {
	t.Helper()
	h, err := c.At(node).LedgerHead(context.Background(), 0)
	if err != nil {
		t.Fatalf("head of %s: %v", node, err)
	}
	return *h
}

// waitSameHead waits until the ledgers of nodes a and b have the same head.
func waitSameHead(t *testing.T, c *api.Client, a, b string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "the ledgers of "+a+" and "+b+" to have the same head", func() bool {
		ha, errA := c.At(a).LedgerHead(context.Background(), 0)
		hb, errB := c.At(b).LedgerHead(context.Background(), 0)
		return errA == nil && errB == nil && ha.Seq == hb.Seq && ha.Hash == hb.Hash && ha.Seq > 0
	})
}

// noCopyLeft fails t if a bootstrap left a copy or a replaced ledger
// beside data's ledger.
func noCopyLeft(t *testing.T, data string) {
	t.Helper()
	for _, name := range []string{"ledger.bootstrap", "ledger.replaced"} {
		if _, err := os.Stat(filepath.Join(data, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left beside the ledger (stat: %v)", name, err)
		}
	}
}

// firstRecord is the first audit line of node's ledger, once it has one.
func firstRecord(t *testing.T, c *api.Client, node string) api.AuditLine {
	t.Helper()
	var p *api.AuditPage
	var err error
	poll.Eventually(t, 30*time.Second, "a first record in "+node+"'s ledger", func() bool {
		p, err = c.At(node).Audit(context.Background(), api.AuditRequest{Limit: 1})
		return err == nil && len(p.Items) == 1
	})
	return p.Items[0]
}

// A ledger node started after the stream dropped its first messages copies
// the ledger of the node that has them, verified, and ends with the same
// head, serving the old runs; stopped, and away longer than the stream
// keeps, it copies again over its own (shorter, agreeing) ledger.
func TestLateLedgerNodeBootstrapsFromAPeer(t *testing.T) {
	ctx := context.Background()
	a := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := a.Submit(t, "one.yaml", onePlan)
	a.WaitRun(t, run, 30*time.Second)
	trimStream(t, a.JS, 3)

	root, err := trust.LoadRoot(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.PeerConfig(t, a.NATSURL(), root, "late")
	cfg.Ledger.BootstrapTimeout = 20 * time.Second
	var l1 logs
	b := nodetest.StartLogged(t, cfg, l1.logger())
	waitSameHead(t, a.API, "test-node", "late")
	l1.has(t, "ledger copied from a peer and verified", "peer=test-node")
	if r, err := a.API.At("late").RunsGet(ctx, run); err != nil || r.Status != event.RunSucceeded {
		t.Fatalf("the late node serves the old run: %+v, %v", r, err)
	}
	if v, err := a.API.At("late").LedgerVerify(ctx); err != nil || !v.OK {
		t.Fatalf("the copied ledger verifies: %+v, %v", v, err)
	}
	if rec := firstRecord(t, a.API, "late"); rec.Type == string(event.Gap) {
		t.Fatalf("the copied ledger starts with a gap: %+v", rec)
	}
	noCopyLeft(t, cfg.Data)

	// Down longer than the stream keeps: the node's ledger is behind the
	// stream's first message. It agrees with the peer's, which replaces it.
	b.Stop(t)
	before := head(t, a.API, "test-node")
	run2 := a.Submit(t, "two.yaml", onePlan)
	a.WaitRun(t, run2, 30*time.Second)
	trimStream(t, a.JS, 2)
	var l2 logs
	nodetest.StartLogged(t, cfg, l2.logger())
	waitSameHead(t, a.API, "test-node", "late")
	l2.has(t, "ledger copied from a peer and verified", "peer=test-node")
	if h := head(t, a.API, "late"); h.Seq <= before.Seq {
		t.Fatalf("late node's head %d, want past %d", h.Seq, before.Seq)
	}
	if r, err := a.API.At("late").RunsGet(ctx, run2); err != nil || r.Status != event.RunSucceeded {
		t.Fatalf("the late node serves the new run: %+v, %v", r, err)
	}
	noCopyLeft(t, cfg.Data)
}

// cluster is a NATS server with the protocol's streams, a history of runs
// on its events stream, and a root that enrolls nodes.
type cluster struct {
	srv  *embedded.Server
	js   jetstream.JetStream
	root *trust.Root
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	root := bustest.NewIdentities(t).Root
	srv := bustest.SecureServer(t, root)
	conn := bustest.ConnectHarness(t, srv, root)
	c := &cluster{srv: srv, js: conn.JS, root: root}
	c.history(t)
	return c
}

// history publishes two runs of three steps.
func (c *cluster) history(t *testing.T) {
	t.Helper()
	w, err := nodetest.NewHistoryWriter(c.root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.Publish(ctx, c.js, nodetest.History{Runs: 2, Steps: 3, Batch: 2}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) lastSeq(t *testing.T) uint64 {
	t.Helper()
	s, err := c.js.Stream(context.Background(), bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// node returns the configuration of a memory node named name.
func (c *cluster) node(t *testing.T, name string, timeout time.Duration) config.Config {
	cfg := nodetest.PeerConfig(t, c.srv.ClientURL(), c.root, name)
	cfg.Ledger.BootstrapTimeout = timeout
	return cfg
}

// caughtUp waits until n's ledger has folded the whole stream.
func (c *cluster) caughtUp(t *testing.T, n *nodetest.Node, name string) {
	t.Helper()
	last := c.lastSeq(t)
	poll.Eventually(t, 30*time.Second, name+" to fold the stream", func() bool {
		h, err := n.API.At(name).LedgerHead(context.Background(), 0)
		return err == nil && h.Applied >= last
	})
}

// forge rewrites the ledger in dir: every goal.submitted says another
// goal, and the chain is rebuilt so that it imports.
func forge(t *testing.T, dir string) {
	t.Helper()
	opts := ledger.Options{Logger: ledgertest.Logger(t)}
	st, err := ledger.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := errors.Join(st.Export(&export), st.Close()); err != nil {
		t.Fatal(err)
	}
	forged := ledgertest.Rechain(t, export.Bytes(), func(ev *event.Event) bool {
		if ev.Type == event.GoalSubmitted {
			ev.Data = json.RawMessage(`{"goal":"forged"}`)
		}
		return true
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	st, err = ledger.Import(dir, bytes.NewReader(forged), opts)
	if err != nil {
		t.Fatalf("import the forged ledger: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// A peer whose ledger does not verify (its chain rebuilt over changed
// records) is refused; the node starts with the hole recorded as a gap.
func TestBootstrapRefusesAPeerWhoseLedgerDoesNotVerify(t *testing.T) {
	c := newCluster(t)
	pcfg := c.node(t, "forger", 0)
	p := nodetest.Start(t, pcfg)
	c.caughtUp(t, p, "forger")
	p.Stop(t)
	forge(t, filepath.Join(pcfg.Data, "ledger"))
	p = nodetest.Start(t, pcfg)
	first := trimStream(t, c.js, 2)

	var l logs
	cfg := c.node(t, "late", 3*time.Second)
	b := nodetest.StartLogged(t, cfg, l.logger())
	l.has(t, "level=ERROR", "a peer's ledger was refused", "peer=forger", "does not verify at record")
	l.has(t, "level=ERROR", "no peer ledger node had what the events stream lost", "refused=forger")
	rec := firstRecord(t, b.API, "late")
	if want := fmt.Sprintf(`{"from":1,"to":%d}`, first-1); rec.Type != string(event.Gap) || string(rec.Data) != want {
		t.Fatalf("first record %s %s, want a gap %s", rec.Type, rec.Data, want)
	}
	if hp, hb := head(t, p.API, "forger"), head(t, p.API, "late"); hp.Hash == hb.Hash {
		t.Fatalf("the late node took the forged ledger: %+v", hb)
	}
	noCopyLeft(t, cfg.Data)
}

// With no peer, or with bootstrap off, start is not held up: the node
// records the hole as a gap and says how to fill it.
func TestBootstrapWithoutPeerRecordsAGap(t *testing.T) {
	c := newCluster(t)
	first := trimStream(t, c.js, 2)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		log     string
	}{
		{"alone", time.Second, "no peer ledger node had what the events stream lost"},
		{"off", 0, "ledger bootstrap is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l logs
			start := time.Now()
			n := nodetest.StartLogged(t, c.node(t, tc.name, tc.timeout), l.logger())
			t.Logf("started in %s", time.Since(start))
			l.has(t, "level=ERROR", tc.log, "remedy=")
			rec := firstRecord(t, n.API, tc.name)
			if want := fmt.Sprintf(`{"from":1,"to":%d}`, first-1); rec.Type != string(event.Gap) || string(rec.Data) != want {
				t.Fatalf("first record %s %s, want a gap %s", rec.Type, rec.Data, want)
			}
			n.Stop(t)
		})
	}
}

// A node whose own ledger disagrees with the peer's at its head refuses to
// start, and its ledger is left as it was.
func TestBootstrapNeverOverwritesADivergingLedger(t *testing.T) {
	c := newCluster(t)
	p := nodetest.Start(t, c.node(t, "peer", 0))
	c.caughtUp(t, p, "peer")

	cfg := c.node(t, "diverged", 10*time.Second)
	dir := filepath.Join(cfg.Data, "ledger")
	st := ledgertest.OpenDir(t, dir)
	kit := ledgertest.NewKit(t)
	if _, err := st.Append([]ledger.Message{
		kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "another stream"})),
		kit.Message(2, kit.Operator, event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: "another stream"})),
	}); err != nil {
		t.Fatal(err)
	}
	seq, hash := st.Head()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	trimStream(t, c.js, 2)

	var l logs
	n, err := node.New(cfg, l.logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = n.Start(ctx)
	if !errors.Is(err, bootstrap.ErrDiverged) || !strings.Contains(err.Error(), "agentctl ledger verify --all") {
		n.Stop(ctx)
		t.Fatalf("start = %v, want ErrDiverged with the remedy", err)
	}
	l.has(t, "level=ERROR", "ledger diverges from a peer's", "peer=peer")
	st = ledgertest.OpenDir(t, dir)
	if s, h := st.Head(); s != seq || h != hash {
		t.Fatalf("the diverging ledger changed: head %d %x, was %d %x", s, h, seq, hash)
	}
	noCopyLeft(t, cfg.Data)
}
