package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
)

// A full disk is a state, not a failure: an Emit that meets it waits (it is
// not acknowledged), the outbox says why, and once space returns the
// store is reopened, the Emit returns and every acknowledged event is
// published, in order, with nothing lost and the outbox never failed.
func TestFullDiskWaitsAndResumes(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	dir := tmpfs.Mount(t, 8<<20)
	ob, err := outbox.Open(filepath.Join(dir, "outbox"), ids.Node(t, "n1", event.RoleExecutor), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	ob.Start(c.JS)
	ctx := context.Background()
	var want []string
	emit := func(i int) error {
		d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(i, strings.Repeat("x", 2000))})
		if err := ob.Emit(ctx, d); err != nil {
			return err
		}
		want = append(want, d.ID)
		return nil
	}
	for i := range 20 {
		if err := emit(i); err != nil {
			t.Fatal(err)
		}
	}
	tmpfs.Fill(t, dir, 0)
	done := make(chan error, 1)
	go func() {
		// Enough to need more WAL space than is left.
		var err error
		for i := 20; i < 4000 && err == nil; i++ {
			err = emit(i)
		}
		done <- err
	}()
	poll.Eventually(t, 10*time.Second, "the outbox to report the full disk", func() bool { return ob.NoSpace() != nil })
	select {
	case err := <-done:
		t.Fatalf("emits finished on a full disk: %v", err)
	default:
	}
	if err := ob.Err(); err != nil {
		t.Fatalf("a full disk made the outbox fail: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("emit after space returned: %v", err)
	}
	if err := ob.NoSpace(); err != nil {
		t.Fatalf("NoSpace after recovery = %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, c.JS, envelope.NewVerifier(ids.Root), len(want))
	if len(got) != len(want) {
		t.Fatalf("published %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got[i].ID, want[i])
		}
	}
}
