package natsauth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/roles/executor"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cluster is an operator-mode nats-server with JetStream in t.TempDir(),
// trusting the NATS operator derived from a fresh root.
type cluster struct {
	t    *testing.T
	root *trust.Root
	auth *natsauth.Authority
	srv  *server.Server
	url  string
}

// newAuthority returns a fresh root, its NATS authority and the bundle
// of a cluster that revoked nobody.
func newAuthority(t *testing.T) (*trust.Root, *natsauth.Authority, natsauth.Bundle) {
	t.Helper()
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := auth.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	return root, auth, b
}

// startServer starts a nats-server with opts put in operator mode for
// bundle b (resolver directory dir), waits until it takes connections,
// and shuts it down when the test ends (earlier Shutdowns are harmless).
func startServer(t *testing.T, opts *server.Options, b natsauth.Bundle, dir string) *server.Server {
	t.Helper()
	if err := embedded.OperatorOptions(opts, b, dir); err != nil {
		t.Fatal(err)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatalf("server %s not ready", opts.ServerName)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	root, auth, b := newAuthority(t)
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: t.TempDir(), SyncAlways: true,
		NoSigs: true, NoLog: true,
	}
	srv := startServer(t, opts, b, filepath.Join(t.TempDir(), "jwt"))
	return &cluster{t: t, root: root, auth: auth, srv: srv, url: srv.ClientURL()}
}

// client is a connection of one identity, with the permission errors the
// server sent it.
type client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	user    string // NATS user public key
	opts    []nats.Option
	mu      sync.Mutex
	denials []string
}

func (c *client) denialList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.denials...)
}

func (c *client) denied(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.denials {
		if strings.Contains(d, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

// connect issues identity kind/id/roles its user JWT and connects with it.
func (cl *cluster) connect(kind, id string, roles ...string) *client {
	cl.t.Helper()
	ident, err := trust.NewIdentity(cl.root, id, kind, roles, time.Hour)
	if err != nil {
		cl.t.Fatal(err)
	}
	kp, err := natsauth.UserKey(ident)
	if err != nil {
		cl.t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	ujwt, err := cl.auth.UserJWT(natsauth.Identity{Kind: kind, ID: id, Roles: roles, UserKey: pub}, time.Now().Add(time.Hour))
	if err != nil {
		cl.t.Fatal(err)
	}
	opts, err := natsauth.ConnectOptions(kind, id, ujwt, kp)
	if err != nil {
		cl.t.Fatal(err)
	}
	c := &client{user: pub, opts: opts}
	opts = append(opts, nats.Name(kind+":"+id), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
				c.mu.Lock()
				c.denials = append(c.denials, err.Error())
				c.mu.Unlock()
			}
		}))
	nc, err := nats.Connect(cl.url, opts...)
	if err != nil {
		cl.t.Fatalf("connect %s %s: %v", kind, id, err)
	}
	cl.t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		cl.t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// short is the wait for an answer that a refused request never gets.
func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// expectDenied checks that op failed and that the server reported a
// permission violation on subject to c.
func expectDenied(t *testing.T, c *client, what, subject string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: allowed, want refused", what)
	}
	poll.Eventually(t, 5*time.Second, fmt.Sprintf("%s: a permission violation on %s (err %v)", what, subject, err),
		func() bool { return c.denied(subject) })
}

// streams creates the protocol's streams as a node does at start (with a
// node identity: creating absent streams is a node's right).
func (cl *cluster) streams(c *client) {
	cl.t.Helper()
	if err := bus.EnsureStreams(ctxT(cl.t), c.js, bus.StreamConfig{Replicas: 1}); err != nil {
		cl.t.Fatalf("streams: %v", err)
	}
}

func TestAnonymousAndForeignClientsRefused(t *testing.T) {
	cl := newCluster(t)
	if nc, err := nats.Connect(cl.url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connection: %v, want an authorization error", err)
	}
	// A user of another cluster's root: same names, other keys.
	other := newCluster(t)
	id, err := trust.NewIdentity(other.root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := natsauth.UserKey(id)
	pub, _ := kp.PublicKey()
	ujwt, err := other.auth.UserJWT(natsauth.Identity{Kind: trust.KindNode, ID: "exec-b", Roles: id.Roles, UserKey: pub}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := natsauth.ConnectOptions(trust.KindNode, "exec-b", ujwt, kp)
	if nc, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("a user of another root's operator was accepted")
	}
}

func TestExecutorLeastPrivilege(t *testing.T) {
	cl := newCluster(t)
	orch := cl.connect(trust.KindNode, "orch-a", event.RoleOrchestrator)
	cl.streams(orch)
	ex := cl.connect(trust.KindNode, "exec-b", event.RoleExecutor)
	ctx := ctxT(t)

	// Allowed: its own durable consumer, as the executor makes it.
	cons, err := ex.js.CreateOrUpdateConsumer(ctx, bus.EventsStream, jetstream.ConsumerConfig{
		Durable:        executor.ConsumerName("exec-b"),
		FilterSubjects: executor.Subjects("exec-b"),
		AckPolicy:      jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatalf("executor creates its own durable: %v", err)
	}
	if _, err := cons.Info(ctx); err != nil {
		t.Fatalf("executor reads its durable's info: %v", err)
	}
	// The orchestrator assigns it a task (a decision: its right).
	if _, err := orch.js.Publish(ctx, event.Subject(event.TaskAssigned, "exec-b"), []byte("assign")); err != nil {
		t.Fatalf("orchestrator publishes task.assigned: %v", err)
	}
	// The orchestrator writes the leader bucket.
	kv, err := orch.js.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "leader", []byte("orch-a")); err != nil {
		t.Fatalf("orchestrator writes the leader bucket: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got int
	for m := range batch.Messages() {
		got++
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("executor acks on its durable: %v", err)
		}
	}
	if err := batch.Error(); err != nil || got != 1 {
		t.Fatalf("executor fetch: %d messages, err %v", got, err)
	}
	for _, typ := range []event.Type{event.TaskStarted, event.TaskFinished, event.ExecutorOnline} {
		if _, err := ex.js.Publish(ctx, event.Subject(typ, ""), []byte("x")); err != nil {
			t.Fatalf("executor publishes %s: %v", typ, err)
		}
	}
	if _, err := ex.js.Publish(ctx, bus.LogSubject("run1", "s1"), []byte("out")); err != nil {
		t.Fatalf("executor publishes step output: %v", err)
	}
	// Its fencing read: the last election in the stream.
	st, err := ex.js.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatalf("executor reads the stream's info: %v", err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, event.Subject(event.TaskAssigned, "exec-b")); err != nil {
		t.Fatalf("executor reads a last message: %v", err)
	}

	// Refused by NATS.
	err = ex.js.DeleteStream(short(t), bus.EventsStream)
	expectDenied(t, ex, "delete the events stream", "$JS.API.STREAM.DELETE."+bus.EventsStream, err)
	err = st.Purge(short(t))
	expectDenied(t, ex, "purge the events stream", "$JS.API.STREAM.PURGE."+bus.EventsStream, err)
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 1
	_, err = ex.js.UpdateStream(short(t), cfg)
	expectDenied(t, ex, "update the events stream", "$JS.API.STREAM.UPDATE."+bus.EventsStream, err)
	err = st.DeleteMsg(short(t), 1)
	expectDenied(t, ex, "delete a message", "$JS.API.STREAM.MSG.DELETE."+bus.EventsStream, err)
	err = ex.js.DeleteConsumer(short(t), bus.EventsStream, executor.ConsumerName("exec-a"))
	expectDenied(t, ex, "delete another executor's consumer", "$JS.API.CONSUMER.DELETE."+bus.EventsStream+".exec_exec-a", err)
	if ekv, err := ex.js.KeyValue(ctx, bus.LeaderBucket); err != nil {
		t.Fatalf("executor opens the leader bucket for reading: %v", err)
	} else {
		// The bucket's TTL is the lease's (1.5 s by default): write just before.
		if _, err := kv.Put(ctx, "leader", []byte("orch-a")); err != nil {
			t.Fatal(err)
		}
		if e, err := ekv.Get(ctx, "leader"); err != nil || string(e.Value()) != "orch-a" {
			t.Fatalf("executor reads the leader: %v", err)
		}
		_, err = ekv.Put(short(t), "leader", []byte("exec-b"))
		expectDenied(t, ex, "write the leader bucket", "$KV."+bus.LeaderBucket+".leader", err)
	}
	_, err = ex.js.Publish(short(t), event.Subject(event.TaskAssigned, "exec-b"), []byte("forged"))
	expectDenied(t, ex, "publish a decision", event.Subject(event.TaskAssigned, "exec-b"), err)
	_, err = ex.js.Publish(short(t), event.Subject(event.GoalSubmitted, ""), []byte("forged"))
	expectDenied(t, ex, "publish an operator's event", event.Subject(event.GoalSubmitted, ""), err)
	// Another identity's inbox.
	other := natsauth.InboxPrefix(trust.KindNode, "exec-a") + ".>"
	if _, err := ex.nc.SubscribeSync(other); err != nil {
		t.Fatal(err)
	}
	expectDenied(t, ex, "subscribe to another node's inbox", other, errors.New("subscribed"))
	// The whole JetStream API is not its to list.
	_, err = ex.nc.Request("$JS.API.STREAM.NAMES", nil, 300*time.Millisecond)
	expectDenied(t, ex, "list the streams", "$JS.API.STREAM.NAMES", err)
}

// TestViewer: an auditor reads every event, with the client library's
// ordered consumers (as the nats CLI's `sub --stream` does) and calls read
// queries, and writes nothing.
func TestViewer(t *testing.T) {
	cl := newCluster(t)
	orch := cl.connect(trust.KindNode, "orch-a", event.RoleOrchestrator)
	cl.streams(orch)
	ctx := ctxT(t)
	for _, typ := range []event.Type{event.LeaderElected, event.PlanAccepted, event.RunFinished} {
		if _, err := orch.js.Publish(ctx, event.Subject(typ, ""), []byte(typ)); err != nil {
			t.Fatal(err)
		}
	}
	// A node answers a read query (a reply to the requester's inbox).
	sub, err := orch.nc.QueueSubscribe("agentic.api.runs.list", "agentic-api", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"data":[]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := orch.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	v := cl.connect(trust.KindOperator, "auditor", natsauth.RoleViewer)
	// Pull ordered consumer (jetstream package).
	oc, err := v.js.OrderedConsumer(ctx, bus.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{event.SubjectAll}})
	if err != nil {
		t.Fatalf("viewer ordered consumer: %v", err)
	}
	for i := 0; i < 3; i++ {
		m, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("viewer reads event %d: %v", i+1, err)
		}
		if md, _ := m.Metadata(); md.Sequence.Stream != uint64(i+1) {
			t.Fatalf("viewer read stream seq %d, want %d", md.Sequence.Stream, i+1)
		}
	}
	// Push ordered consumer (the legacy API the nats CLI uses), delivered
	// to the viewer's own inbox.
	ljs, err := v.nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	psub, err := ljs.SubscribeSync(event.SubjectAll, nats.OrderedConsumer(), nats.DeliverAll(), nats.BindStream(bus.EventsStream))
	if err != nil {
		t.Fatalf("viewer push ordered consumer: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := psub.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("viewer push read %d: %v", i+1, err)
		}
	}
	// No Unsubscribe: it would ask to delete the consumer, which a viewer
	// may not; an ephemeral consumer goes by itself once unused.
	// What `nats --creds F --inbox-prefix P sub --stream AGENTIC_EVENTS
	// --all 'agentic.ev.>'` does (natscli's sub command: a push consumer
	// with flow control, heartbeats and no acks).
	csub, err := ljs.SubscribeSync(event.SubjectAll, nats.EnableFlowControl(), nats.IdleHeartbeat(5*time.Second),
		nats.AckNone(), nats.BindStream(bus.EventsStream), nats.DeliverAll())
	if err != nil {
		t.Fatalf("viewer subscribes as the nats CLI does: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := csub.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("viewer reads as the nats CLI does, message %d: %v", i+1, err)
		}
	}
	if _, err := v.nc.Request("agentic.api.runs.list", []byte(`{}`), 5*time.Second); err != nil {
		t.Fatalf("viewer calls runs.list: %v", err)
	}

	_, err = v.js.Publish(short(t), event.Subject(event.GoalSubmitted, ""), []byte("goal"))
	expectDenied(t, v, "viewer submits a goal", event.Subject(event.GoalSubmitted, ""), err)
	_, err = v.js.Publish(short(t), event.Subject(event.RunCancel, ""), []byte("cancel"))
	expectDenied(t, v, "viewer cancels a run", event.Subject(event.RunCancel, ""), err)
	_, err = v.nc.Request("agentic.api.node.backup", []byte(`{}`), 300*time.Millisecond)
	expectDenied(t, v, "viewer asks for a backup", "agentic.api.node.backup", err)
	err = v.js.DeleteStream(short(t), bus.EventsStream)
	expectDenied(t, v, "viewer deletes the stream", "$JS.API.STREAM.DELETE."+bus.EventsStream, err)

	// An operator may submit a goal.
	op := cl.connect(trust.KindOperator, "alice", trust.OperatorRole)
	if _, err := op.js.Publish(ctx, event.Subject(event.GoalSubmitted, ""), []byte("goal")); err != nil {
		t.Fatalf("operator submits a goal: %v", err)
	}
	err = op.js.DeleteStream(short(t), bus.EventsStream)
	expectDenied(t, op, "operator deletes the stream", "$JS.API.STREAM.DELETE."+bus.EventsStream, err)
}

func TestAdminDeletesStream(t *testing.T) {
	cl := newCluster(t)
	orch := cl.connect(trust.KindNode, "orch-a", event.RoleOrchestrator)
	cl.streams(orch)
	admin := cl.connect(trust.KindOperator, "root-admin", natsauth.RoleAdmin)
	ctx := ctxT(t)
	st, err := admin.js.Stream(ctx, bus.LogsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatalf("admin purges: %v", err)
	}
	if err := admin.js.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatalf("admin deletes the events stream: %v", err)
	}
	if _, err := admin.js.Stream(ctx, bus.EventsStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after delete: %v", err)
	}
}

// TestRevocationClosesConnection: a revocation pushed in a new account JWT
// closes the revoked user's connection and refuses its next one; others
// stay.
func TestRevocationClosesConnection(t *testing.T) {
	cl := newCluster(t)
	ex := cl.connect(trust.KindNode, "exec-b", event.RoleExecutor)
	keep := cl.connect(trust.KindNode, "exec-c", event.RoleExecutor)
	closed := make(chan struct{})
	ex.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })

	sysJWT, sysSeed, err := cl.auth.SystemUserCreds(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := nats.Connect(cl.url, nats.UserJWTAndSeed(sysJWT, string(sysSeed)), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("system user connects: %v", err)
	}
	defer sys.Close()
	acc, err := cl.auth.AccountJWT(map[string]time.Time{ex.user: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.PushAccount(ctxT(t), sys, acc); err != nil {
		t.Fatalf("push the revocation: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked user's connection is still open")
	}
	if !keep.nc.IsConnected() {
		t.Fatal("another user's connection was closed")
	}
	// Its credentials no longer connect.
	if nc, err := nats.Connect(cl.url, append(ex.opts, nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("the revoked user connected again")
	}
}

// TestCredsFile: the credentials file Creds writes is what nats.go (and
// the nats CLI) read.
func TestCredsFile(t *testing.T) {
	cl := newCluster(t)
	ident, err := trust.NewIdentity(cl.root, "auditor", trust.KindOperator, []string{natsauth.RoleViewer}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := natsauth.UserKey(ident)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	ujwt, err := cl.auth.UserJWT(natsauth.Identity{Kind: trust.KindOperator, ID: "auditor", Roles: ident.Roles, UserKey: pub}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	b, err := natsauth.Creds(ujwt, kp)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auditor.creds")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(cl.url, nats.UserCredentials(path), nats.CustomInboxPrefix(natsauth.InboxPrefix(trust.KindOperator, "auditor")), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connect with the creds file: %v", err)
	}
	nc.Close()

	// One file for both: the NATS blocks first (the NATS parser takes the
	// first decorated block), then the agentic credential, key and root
	// (trust.ReadCreds skips what is not its PEM).
	both := filepath.Join(t.TempDir(), "both.creds")
	if err := trust.WriteCreds(both, ident, cl.root); err != nil {
		t.Fatal(err)
	}
	agentic, err := os.ReadFile(both)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(both, append(b, agentic...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, groot, err := trust.ReadCreds(both)
	if err != nil || got.ID != "auditor" || !groot.Public.Equal(cl.root.Public) {
		t.Fatalf("trust.ReadCreds of the combined file: %v", err)
	}
	nc, err = nats.Connect(cl.url, nats.UserCredentials(both), nats.CustomInboxPrefix(natsauth.InboxPrefix(trust.KindOperator, "auditor")), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connect with the combined creds file: %v", err)
	}
	nc.Close()
}

// TestLedgerNode: a node that folds the ledger reads the events stream
// with an ordered consumer (as ledger/follow does) and watches the streams'
// advisories, and may not change a stream (cluster settings are applied
// by an admin).
func TestLedgerNode(t *testing.T) {
	cl := newCluster(t)
	ln := cl.connect(trust.KindNode, "plan-a", event.RolePlanner)
	cl.streams(ln)
	ctx := ctxT(t)
	if _, err := ln.js.Publish(ctx, event.Subject(event.PlanProposed, ""), []byte("plan")); err != nil {
		t.Fatalf("planner publishes plan.proposed: %v", err)
	}
	oc, err := ln.js.OrderedConsumer(ctx, bus.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{event.SubjectAll}})
	if err != nil {
		t.Fatalf("ledger node ordered consumer: %v", err)
	}
	if _, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatalf("ledger node reads the stream: %v", err)
	}
	adv := "$JS.EVENT.ADVISORY.STREAM.*." + bus.EventsStream
	if _, err := ln.nc.SubscribeSync(adv); err != nil {
		t.Fatal(err)
	}
	if err := ln.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := ln.js.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxAge = time.Second
	_, err = ln.js.UpdateStream(short(t), cfg)
	expectDenied(t, ln, "ledger node updates the stream", "$JS.API.STREAM.UPDATE."+bus.EventsStream, err)
	if ln.denied(adv) {
		t.Fatal("ledger node refused the streams' advisories")
	}
	_, err = ln.js.Publish(short(t), event.Subject(event.TaskStarted, ""), []byte("x"))
	expectDenied(t, ln, "planner publishes an executor's event", event.Subject(event.TaskStarted, ""), err)
}

// TestRevocationReachesEveryServer: on a cluster of two servers given the
// same bundle, a revocation pushed to one closes the user's connection on
// the other (the system account spans the cluster).
func TestRevocationReachesEveryServer(t *testing.T) {
	root, auth, b := newAuthority(t)
	start := func(name string, routes []string) *server.Server {
		opts := &server.Options{
			ServerName: name, Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "agentic-test", Host: "127.0.0.1", Port: server.RANDOM_PORT},
		}
		for _, r := range routes {
			opts.Routes = append(opts.Routes, server.RoutesFromStr(r)...)
		}
		return startServer(t, opts, b, filepath.Join(t.TempDir(), "jwt"))
	}
	a := start("a", nil)
	bsrv := start("b", []string{"nats://" + a.ClusterAddr().String()})
	poll.Eventually(t, 10*time.Second, "the two servers route to each other", func() bool {
		return a.NumRoutes() > 0 && bsrv.NumRoutes() > 0
	})
	// ... and each knows the other's system subscriptions (account
	// updates among them), so that a push to one reaches the other.
	poll.Eventually(t, 10*time.Second, "the system account's subscriptions are routed", func() bool {
		return a.SystemAccount().RoutedSubs() > 0 && bsrv.SystemAccount().RoutedSubs() > 0
	})

	id, err := trust.NewIdentity(root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := natsauth.UserKey(id)
	pub, _ := kp.PublicKey()
	ujwt, err := auth.UserJWT(natsauth.Identity{Kind: trust.KindNode, ID: "exec-b", Roles: id.Roles, UserKey: pub}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := natsauth.ConnectOptions(trust.KindNode, "exec-b", ujwt, kp)
	closed := make(chan struct{})
	nc, err := nats.Connect(bsrv.ClientURL(), append(opts, nats.MaxReconnects(0), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatalf("connect to server b: %v", err)
	}
	defer nc.Close()

	sysJWT, sysSeed, err := auth.SystemUserCreds(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := nats.Connect(a.ClientURL(), nats.UserJWTAndSeed(sysJWT, string(sysSeed)), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("system user connects to server a: %v", err)
	}
	defer sys.Close()
	acc, err := auth.AccountJWT(map[string]time.Time{pub: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.PushAccount(ctxT(t), sys, acc); err != nil {
		t.Fatalf("push to server a: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked user's connection on server b is still open")
	}
	// No other client of the account is connected: the servers load it
	// again, from their resolver directories, revocation included.
	for _, s := range []*server.Server{a, bsrv} {
		if nc2, err := nats.Connect(s.ClientURL(), append(opts, nats.MaxReconnects(0))...); err == nil {
			nc2.Close()
			t.Fatalf("the revoked user connected again to server %s", s.Name())
		}
	}
}

// TestRevocationOutlivesRestart: a server restarted with the bundle it was
// first given (older than the pushed revocation) still refuses the revoked
// user: its resolver directory kept the newer account JWT.
func TestRevocationOutlivesRestart(t *testing.T) {
	root, auth, b := newAuthority(t)
	dir := filepath.Join(t.TempDir(), "jwt")
	start := func() *server.Server {
		return startServer(t, &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true}, b, dir)
	}
	user := func(id string) ([]nats.Option, string) {
		ident, err := trust.NewIdentity(root, id, trust.KindNode, []string{event.RoleExecutor}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		kp, _ := natsauth.UserKey(ident)
		pub, _ := kp.PublicKey()
		ujwt, err := auth.UserJWT(natsauth.Identity{Kind: trust.KindNode, ID: id, Roles: ident.Roles, UserKey: pub}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		opts, _ := natsauth.ConnectOptions(trust.KindNode, id, ujwt, kp)
		return append(opts, nats.MaxReconnects(0)), pub
	}
	revokedOpts, revoked := user("exec-b")
	keepOpts, _ := user("exec-c")

	s := start()
	sysJWT, sysSeed, err := auth.SystemUserCreds(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := nats.Connect(s.ClientURL(), nats.UserJWTAndSeed(sysJWT, string(sysSeed)), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	// The pushed JWT must be newer than the bundle's (JWT times are in
	// seconds): issue it a second later.
	bac, _ := b.Verify("")
	poll.Eventually(t, 3*time.Second, "a second has passed since the bundle", func() bool {
		return time.Now().Unix() > bac.Account.IssuedAt
	})
	acc, err := auth.AccountJWT(map[string]time.Time{revoked: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := natsauth.PushAccount(ctxT(t), sys, acc); err != nil {
		t.Fatal(err)
	}
	sys.Close()
	s.Shutdown()
	s.WaitForShutdown()

	s = start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if nc, err := nats.Connect(s.ClientURL(), revokedOpts...); err == nil {
		nc.Close()
		t.Fatal("the revoked user connected after a restart")
	}
	nc, err := nats.Connect(s.ClientURL(), keepOpts...)
	if err != nil {
		t.Fatalf("another user after a restart: %v", err)
	}
	nc.Close()
}

// TestServerConfigFile: the configuration ServerConfig writes puts a
// nats-server (as its configuration file loads it) in operator mode: an
// anonymous client is refused, a node of the cluster connects.
func TestServerConfigFile(t *testing.T) {
	root, auth, b := newAuthority(t)
	dir := t.TempDir()
	conf, err := natsauth.ServerConfig(b, filepath.Join(dir, "jwt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nats.conf")
	full := "listen: 127.0.0.1:-1\njetstream { store_dir: " + fmt.Sprintf("%q", filepath.Join(dir, "js")) + " }\n" + conf
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server does not load the configuration: %v\n%s", err, full)
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected")
	}
	id, err := trust.NewIdentity(root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	co, err := auth.UserOptions(root, id)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), append(co, nats.MaxReconnects(0))...)
	if err != nil {
		t.Fatalf("a node of the cluster cannot connect: %v", err)
	}
	nc.Close()
}
