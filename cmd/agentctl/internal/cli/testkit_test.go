package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// nats.go's global timer pool is process-wide, not per test; real
		// nodes (nodetest) start it.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"),
	)
}

// harness is a real embedded JetStream server with the protocol's streams,
// an operator creds file, and optionally a fake node answering the API.
type harness struct {
	t     *testing.T
	url   string
	conn  *bus.Conn
	root  *trust.Root
	creds string
	node  *fakeNode
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	srv := bustest.Server(t)
	ids := bustest.NewIdentities(t)
	op := ids.Node(t, "alice", event.RoleOperator)
	creds := filepath.Join(t.TempDir(), "operator.creds")
	if err := natsauth.WriteOperatorCreds(creds, ids.Root, op); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, url: srv.ClientURL(), conn: bustest.Connect(t, srv), root: ids.Root, creds: creds}
}

// signer makes a node identity of the harness's root: what a fake node's
// API server signs its answers with, as agentd's does.
func (h *harness) signer(t testing.TB, node string, roles ...string) func() *trust.Identity {
	t.Helper()
	if len(roles) == 0 {
		roles = []string{event.RoleOrchestrator, event.RoleUI}
	}
	id, err := trust.NewIdentity(h.root, node, trust.KindNode, roles, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return func() *trust.Identity { return id }
}

// withNode starts the fake node's API server.
func (h *harness) withNode() *harness {
	h.t.Helper()
	h.node = newFakeNode()
	h.node.root, h.node.ledger = h.root, h.conn.JS
	srv := api.NewServer(h.conn.NC, "node-a", nil)
	srv.Sign(h.signer(h.t, "node-a"))
	h.node.register(srv)
	if err := srv.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(srv.Stop)
	return h
}

type result struct {
	code           int
	stdout, stderr string
}

// run executes agentctl against the harness's server and creds.
func (h *harness) run(args ...string) result {
	return h.runCtx(context.Background(), nil, args...)
}

func (h *harness) runCtx(ctx context.Context, stdout *syncBuffer, args ...string) result {
	h.t.Helper()
	if stdout == nil {
		stdout = new(syncBuffer)
	}
	var stderr bytes.Buffer
	full := append([]string{"--server", h.url, "--creds", h.creds, "--timeout", "2s"}, args...)
	code := Run(ctx, full, Env{
		Stdin:   strings.NewReader(""),
		Stdout:  stdout,
		Stderr:  &stderr,
		Getenv:  func(string) string { return "" },
		Version: "v9.9.9-test",
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// events returns every message in AGENTIC_EVENTS, verified against the
// harness's root.
func (h *harness) events() []*envelope.Envelope {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := h.conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	v := envelope.NewVerifier(h.root)
	var out []*envelope.Envelope
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			h.t.Fatalf("get msg %d: %v", seq, err)
		}
		env, err := v.Verify(m.Data, m.Subject, time.Now())
		if err != nil {
			h.t.Fatalf("msg %d does not verify: %v", seq, err)
		}
		out = append(out, env)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a test reading while the CLI writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeNode answers the query API from memory. It is a stand-in for agentd's
// roles, speaking the real protocol over a real NATS server.
type fakeNode struct {
	// root is the root the node trusts; ledger the stream it judges
	// (registerLedger).
	root   *trust.Root
	ledger jetstream.JetStream
	mu     sync.Mutex
	runs   []api.Run
	audit  []api.AuditLine
	change chan struct{} // closed and replaced when audit grows
	verify api.VerifyResult
	facts  []api.Fact
	// progress, when set, answers runs.get for ids not in runs: call counts
	// the requests for that id.
	progress func(id string, call int) (*api.Run, error)
	calls    map[string]int
	// pageSize is the most runs or steps per page (default 2), so that
	// small fixtures already take several pages.
	pageSize int
	// runRequests counts the requests of each run method.
	runRequests map[string]int
	// busy answers that many audit requests with api.ErrBusy.
	busy int
	// nodes, leader and epoch answer nodes.list; nodesChange, when set,
	// is called (under the lock) before each nodes.list answer with the
	// count of them so far.
	nodes       []api.NodeSummary
	leader      string
	epoch       uint64
	nodesChange func(f *fakeNode, call int)
	nodesCalls  int
	nodesPages  int
	// alarms answers alarms.list (sorted by node then code).
	alarms []api.Alarm
	// streamAudit answers audit from the real stream (streamAuditLines)
	// instead of audit.
	streamAudit bool
}

func newFakeNode() *fakeNode {
	return &fakeNode{change: make(chan struct{}), calls: map[string]int{}, runRequests: map[string]int{}, verify: api.VerifyResult{OK: true, Events: 3, Head: "9f86d081", Node: "node-a"}}
}

// with changes the node's state under its lock.
func (f *fakeNode) with(change func(f *fakeNode)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeNode) register(s *api.Server) {
	f.registerRuns(s)
	f.registerNodes(s)
	f.registerAlarms(s)
	f.registerLedger(s)
	f.registerMemory(s) // memoryfacts_test.go
	api.HandleTyped(s, api.MethodAudit, f.auditPage)
	api.HandleTyped(s, api.MethodLedgerVerify, func(context.Context, struct{}) (api.VerifyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.verify, nil
	})
	api.HandleTyped(s, api.MethodMemoryGet, func(_ context.Context, req api.MemoryGetRequest) (*api.Fact, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, fa := range f.facts {
			if fa.Scope == req.Scope && fa.Key == req.Key {
				return &fa, nil
			}
		}
		return nil, api.WithHint(api.ErrNotFound, "list facts with: agentctl memory ls")
	})
	api.HandleTyped(s, api.MethodMemoryList, func(_ context.Context, req api.MemoryListRequest) ([]api.Fact, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []api.Fact
		for _, fa := range f.facts {
			if req.Scope == "" || fa.Scope == req.Scope {
				out = append(out, fa)
			}
		}
		return out, nil
	})
	api.HandleTyped(s, api.MethodNodeInfo, func(context.Context, struct{}) (api.NodeInfo, error) {
		return api.NodeInfo{ID: "node-a", Roles: []string{"orchestrator", "ui"}, Version: "v1.2.3", NATS: "embedded", Root: f.root.KeyID(),
			LeaderReason: "node-b (epoch 4) has not renewed its lease for 3s (lease TTL 1.5s)"}, nil
	})
}

func (f *fakeNode) appendAudit(lines ...api.AuditLine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audit = append(f.audit, lines...)
	close(f.change)
	f.change = make(chan struct{})
}

func (f *fakeNode) auditPage(ctx context.Context, req api.AuditRequest) (api.AuditPage, error) {
	after := req.After
	if req.Cursor != "" {
		var err error
		if after, err = strconv.ParseUint(req.Cursor, 10, 64); err != nil {
			return api.AuditPage{}, fmt.Errorf("%w: cursor %q", api.ErrBadRequest, req.Cursor)
		}
	}
	f.mu.Lock()
	if f.busy > 0 {
		f.busy--
		f.mu.Unlock()
		return api.AuditPage{}, api.WithHint(api.ErrBusy, "ask again")
	}
	fromStream := f.streamAudit
	f.mu.Unlock()
	deadline := time.After(req.Wait)
	for {
		var stream []api.AuditLine
		if fromStream {
			var err error
			if stream, err = f.streamAuditLines(ctx); err != nil {
				return api.AuditPage{}, err
			}
		}
		f.mu.Lock()
		audit := f.audit
		if fromStream {
			audit = stream
		}
		lines := []api.AuditLine{}
		last, end := after, true
		for _, l := range audit {
			if l.Seq <= after || (req.Run != "" && !strings.HasPrefix(l.Run, req.Run)) || l.Time.Before(req.Since) ||
				(len(req.Types) > 0 && !slices.Contains(req.Types, l.Type)) {
				continue
			}
			if req.Limit > 0 && len(lines) == req.Limit {
				end = false
				break
			}
			lines, last = append(lines, l), l.Seq
		}
		head := uint64(len(audit))
		if end {
			last = max(last, head)
		}
		change := f.change
		f.mu.Unlock()
		page := api.AuditPage{Page: api.Page[api.AuditLine]{Items: lines, Next: strconv.FormatUint(last, 10), End: end}, Head: head}
		if len(lines) > 0 || req.Wait == 0 {
			return page, nil
		}
		select {
		case <-change:
		case <-deadline:
			return page, nil
		case <-ctx.Done():
			return api.AuditPage{}, ctx.Err()
		}
	}
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, s)
	}
	return v
}
