package follow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
	"github.com/agentic-dev/agentic/internal/fold"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
)

// Below the floor the follower appends nothing and says so; once space
// returns it goes on by itself and folds every event, in order.
func TestFollowPausesBelowTheFloor(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	ctx := context.Background()
	dir := tmpfs.Mount(t, 32<<20)
	mon, err := diskspace.New(diskspace.Config{Dir: dir, Floor: diskspace.Floor{Bytes: 8 << 20}, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mon.Start()
	defer mon.Stop()
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &counter{}
	f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Folders: []fold.Folder{c}, Space: mon})
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	var sent []string
	publish := func(n int) {
		for range n {
			d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(len(sent))})
			sent = append(sent, d.ID)
			if err := bus.PublishSigned(ctx, conn.JS, ex, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(5)
	poll.Eventually(t, 10*time.Second, "5 records folded", func() bool { return c.count() == 5 })
	tmpfs.Fill(t, dir, 4<<20)
	publish(5)
	poll.Eventually(t, 10*time.Second, "the follower to pause", func() bool { return f.Paused() != nil })
	if got := c.count(); got != 5 {
		t.Fatalf("folded %d records below the floor, want 5", got)
	}
	if head, _ := st.Head(); head != 5 {
		t.Fatalf("ledger head %d below the floor, want 5", head)
	}
	if err := os.Remove(filepath.Join(dir, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "10 records folded after space returned", func() bool { return c.count() == 10 })
	if err := f.Paused(); err != nil {
		t.Fatalf("still paused: %v", err)
	}
	for i, id := range sent {
		if c.ids[i] != id {
			t.Fatalf("fold %d = %s, want %s", i, c.ids[i], id)
		}
	}
}

// A commit that meets a full disk anyway (filled between two readings of
// the floor) stops the node cleanly: OnFatal, with a message that says
// what happened and what to do, never a crash.
func TestFollowFullDiskStopsCleanly(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	ctx := context.Background()
	dir := tmpfs.Mount(t, 32<<20)
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fatal := make(chan error, 1)
	c := &counter{}
	f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Folders: []fold.Folder{c},
		OnFatal: func(err error) { fatal <- err }})
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	tmpfs.Fill(t, dir, 0)
	big := strings.Repeat("x", 4000)
	for i := 0; i < 2000; i++ {
		if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(i, big)})); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-fatal:
			if !diskspace.IsNoSpace(err) || !strings.Contains(err.Error(), "free space and start the node again") {
				t.Fatalf("OnFatal(%v), want the full disk and the remedy", err)
			}
			return
		default:
		}
	}
	select {
	case err := <-fatal:
		if !diskspace.IsNoSpace(err) || !strings.Contains(err.Error(), "free space and start the node again") {
			t.Fatalf("OnFatal(%v), want the full disk and the remedy", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no OnFatal after filling the disk; folded %d", c.count())
	}
}
