package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/golang-jwt/jwt/v5"
)

// During an outage a round is retried; once its signatures age past
// resignAfter it is signed again, so what lands after a long outage is not
// expired (and keeps its event ids).
func TestLongOutageResigns(t *testing.T) {
	old := resignAfter
	resignAfter = time.Second
	defer func() { resignAfter = old }()

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
	ob.Start(conn.JS)
	d := event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: "a"})
	emitted := time.Now()
	if err := ob.Emit(ctx, d); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // the outage: publishes fail meanwhile
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
	if !c.IssuedAt.Time.After(emitted.Add(time.Second - time.Millisecond)) {
		t.Fatalf("landed message signed at %s, emitted at %s: not re-signed", c.IssuedAt.Time, emitted)
	}
}
