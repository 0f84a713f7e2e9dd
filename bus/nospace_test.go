package bus_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
	"github.com/nats-io/nats.go/jetstream"
)

// A full disk stops the embedded JetStream's writes (nats-server keeps the
// stream's store failed); once space returns JetStream is restarted
// in-process, without restarting the server or the node: publishing works
// again and every acknowledged message is still there.
func TestEmbeddedHealsAfterFullDisk(t *testing.T) {
	dir := tmpfs.Mount(t, 16<<20)
	rec := &logrec.Recorder{}
	srv, err := embedded.Start(context.Background(), embedded.Config{
		StoreDir: filepath.Join(dir, "nats"), MaxStore: 1 << 30, HealEvery: 50 * time.Millisecond,
		Logger: slog.New(rec),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 32<<10)
	acked := 0
	tmpfs.Fill(t, dir, 2<<20)
	for ; acked < 1000; acked++ {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.JS.Publish(pctx, "fill."+strconv.Itoa(acked), payload)
		pcancel()
		if err != nil {
			t.Logf("publish %d on a full disk: %v", acked, err)
			break
		}
	}
	if acked == 1000 {
		t.Fatal("the disk never filled")
	}
	poll.Eventually(t, 10*time.Second, "the server to report JetStream stopped writing", func() bool { return srv.JetStreamErr() != nil })
	if err := os.Remove(filepath.Join(dir, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "JetStream restarted", func() bool { return srv.JetStreamErr() == nil })
	poll.Eventually(t, 20*time.Second, "a publish to succeed again", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		_, err := c.JS.Publish(pctx, "fill.after", []byte("after"))
		return err == nil
	})
	s, err := c.JS.Stream(ctx, "FILL")
	if err != nil {
		t.Fatal(err)
	}
	for i := range acked {
		if _, err := s.GetMsg(ctx, uint64(i+1)); err != nil {
			t.Fatalf("acknowledged message %d lost: %v", i+1, err)
		}
	}
	if len(rec.Find("JetStream restarted after a full disk: writing again")) == 0 {
		t.Error("no log line says JetStream was restarted")
	}
}
