package follow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/fold"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"))
}

// counter folds events into a list of ids and can snapshot it.
type counter struct {
	mu       sync.Mutex
	ids      []string
	last     uint64
	live     bool
	restored bool
	folds    int
}

func (c *counter) Fold(ev event.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.folds++
	c.ids = append(c.ids, ev.ID)
	c.last = ev.Seq
}
func (c *counter) Settled(live bool)    { c.mu.Lock(); c.live = live; c.mu.Unlock() }
func (c *counter) SnapshotName() string { return "counter" }
func (c *counter) Snapshot() (uint64, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := json.Marshal(c.ids)
	return c.last, b, err
}
func (c *counter) Restore(data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restored = true
	return json.Unmarshal(data, &c.ids)
}
func (c *counter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.ids) }

func TestFollowFoldsVerifiesAndSnapshots(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	ctx := context.Background()
	var sent []string
	for i := range 30 {
		d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(i)})
		sent = append(sent, d.ID)
		if err := bus.PublishSigned(ctx, conn.JS, ex, d); err != nil {
			t.Fatal(err)
		}
	}
	// A forged message: signed by a stranger.
	stranger := bustest.NewIdentities(t).Node(t, "exec-1", event.RoleExecutor)
	if err := bus.PublishSigned(ctx, conn.JS, stranger, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "x"})); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	st, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Folders: []fold.Folder{c}, SnapshotEvery: 10})
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := f.WaitLive(wctx); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "31 records folded", func() bool { return c.count() == 31 })
	if got := f.Stats().Rejected; got != 1 {
		t.Fatalf("rejected = %d, want 1", got)
	}
	for i, id := range sent {
		if c.ids[i] != id {
			t.Fatalf("fold %d = %s, want %s (order)", i, c.ids[i], id)
		}
	}
	f.Stop()

	// More events while the follower is down, then a restart: the folder
	// is restored from the snapshot and sees only what came after it.
	for i := range 5 {
		if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(100 + i)})); err != nil {
			t.Fatal(err)
		}
	}
	snapSeq, _, err := st.LoadSnapshot("counter")
	if err != nil {
		t.Fatalf("no snapshot saved: %v", err)
	}
	c2 := &counter{}
	f2 := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Folders: []fold.Folder{c2}, SnapshotEvery: 10})
	if err := f2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "36 records after restart", func() bool { return c2.count() == 36 })
	if !c2.restored || snapSeq == 0 {
		t.Fatalf("restart did not use the snapshot (restored %v, snapshot at %d)", c2.restored, snapSeq)
	}
	f2.Stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// recorder remembers the last Settled value.
type recorder struct {
	mu   sync.Mutex
	live bool
}

func (r *recorder) Fold(event.Event)  {}
func (r *recorder) Settled(live bool) { r.mu.Lock(); r.live = live; r.mu.Unlock() }
func (r *recorder) isLive() bool      { r.mu.Lock(); defer r.mu.Unlock(); return r.live }

// A node that restarts with nothing new on the stream tells its roles they
// are live without waiting for the next event.
// folded publishes n events, folds them into a fresh ledger with a
// follower that it stops again, and returns the connection and the
// follower configuration (store still open) for the test to go on with.
func folded(t *testing.T, n int) (*bus.Conn, follow.Config) {
	t.Helper()
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ctx := context.Background()
	ex := ids.Node(t, "x", event.RoleExecutor)
	for range n {
		if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: "a"})); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root)}
	f := follow.New(cfg)
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, fmt.Sprintf("%d folds", n), func() bool { return st.AppliedStreamSeq() == uint64(n) })
	f.Stop()
	return conn, cfg
}

func TestIdleRestartSettlesLive(t *testing.T) {
	_, cfg := folded(t, 1)
	ctx := context.Background()
	r := &recorder{}
	cfg.Folders = []fold.Folder{r}
	f2 := follow.New(cfg)
	if err := f2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f2.Stop()
	poll.Eventually(t, 20*time.Second, "Settled(true) with no new traffic", r.isLive)
}

// A stream younger than the ledger (recreated, store lost) is refused.
func TestRecreatedStreamIsRefused(t *testing.T) {
	conn, cfg := folded(t, 3)
	ctx := context.Background()
	if err := conn.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := follow.New(cfg).Start(ctx); !errors.Is(err, follow.ErrStreamBehind) {
		t.Fatalf("start on a recreated stream = %v, want ErrStreamBehind", err)
	}
}

// Stop saves a snapshot at the head, so a clean restart folds nothing
// again; a damaged snapshot is noticed and the folder refolds from the
// start instead of trusting it.
func TestStopSnapshotsAndDamagedSnapshotRefolds(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ctx := context.Background()
	ex := ids.Node(t, "x", event.RoleExecutor)
	for i := range 25 {
		if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: fmt.Sprint(i)})); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	open := func() *ledger.Store {
		st, err := ledger.Open(dir, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	run := func(st *ledger.Store) *counter {
		c := &counter{}
		f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Folders: []fold.Folder{c}, SnapshotEvery: 1000})
		if err := f.Start(ctx); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 20*time.Second, "25 records", func() bool { return c.count() == 25 })
		f.Stop()
		return c
	}
	st := open()
	if c := run(st); c.folds != 25 || c.restored {
		t.Fatalf("first start: %d folds, restored %v", c.folds, c.restored)
	}
	if c := run(st); c.folds != 0 || !c.restored {
		t.Fatalf("clean restart: %d folds, restored %v; want 0 folds from the snapshot Stop saved", c.folds, c.restored)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get([]byte("s/counter"))
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), v...)
	closer.Close()
	bad[len(bad)-3] ^= 1
	if err := db.Set([]byte("s/counter"), bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer st.Close()
	if c := run(st); c.folds != 25 || c.restored {
		t.Fatalf("damaged snapshot: %d folds, restored %v; want a refold of 25", c.folds, c.restored)
	}
}
