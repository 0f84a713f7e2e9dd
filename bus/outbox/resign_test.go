package outbox

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/golang-jwt/jwt/v5"
)

// testClock is an outbox clock the test moves forward; it counts its
// readings.
type testClock struct {
	base  time.Time
	ahead atomic.Int64 // nanoseconds past base
	reads atomic.Int64
}

func (c *testClock) now() time.Time {
	c.reads.Add(1)
	return c.base.Add(time.Duration(c.ahead.Load()))
}

// During an outage a round is retried; once its signatures age past
// resignAfter it is signed again, so what lands after a long outage is not
// expired (and keeps its event ids).
func TestLongOutageResigns(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ctx := context.Background()
	if err := conn.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	id := bustest.NewIdentities(t).Node(t, "n1", event.RoleExecutor)
	ob, err := Open(t.TempDir(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	clock := &testClock{base: time.Now()}
	ob.now = clock.now
	ob.Start(conn.JS)
	d := event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: "a"})
	emitted := clock.base
	if err := ob.Emit(ctx, d); err != nil {
		t.Fatal(err)
	}
	// The outage. The clock is read to sign the round, then before each
	// retry to age it: a second reading means a publish failed. Once the
	// outage has lasted past resignAfter, a retry reads the clock again and
	// finds the round too old.
	poll.Eventually(t, 20*time.Second, "a failed publish of the round", func() bool { return clock.reads.Load() >= 2 })
	clock.ahead.Store(int64(resignAfter + time.Second))
	reads := clock.reads.Load()
	poll.Eventually(t, 20*time.Second, "a retry after resignAfter", func() bool { return clock.reads.Load() > reads })
	if ob.Pending() != 1 {
		t.Fatalf("pending during outage = %d", ob.Pending())
	}
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	stream, err := conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(ctx, d.Subject())
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(string(m.Data), &c); err != nil {
		t.Fatal(err)
	}
	if c.ID != d.ID {
		t.Fatalf("landed message id %s, want the event id %s", c.ID, d.ID)
	}
	if !c.IssuedAt.Time.After(emitted.Add(resignAfter - time.Millisecond)) {
		t.Fatalf("landed message signed at %s, emitted at %s: not re-signed", c.IssuedAt.Time, emitted)
	}
}
