package backup_test

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
	"github.com/agentic-dev/agentic/node/backup"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream's snapshot restores on another server with its messages, their
// sequence numbers and its durable consumer's acknowledged position.
func TestStreamSnapshotRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := bustest.Connect(t, bustest.Server(t))
	for i := range 300 {
		if _, err := src.JS.Publish(ctx, fmt.Sprintf("agentic.ev.test.m%d", i), []byte(strings.Repeat("x", 2000))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := src.JS.CreateConsumer(ctx, bus.EventsStream, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "events.snap")
	s, err := backup.SnapshotStream(ctx, src.NC, bus.EventsStream, path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages != 300 || s.LastSeq != 300 {
		t.Fatalf("snapshot state %d messages, last seq %d; want 300, 300", s.Messages, s.LastSeq)
	}
	if _, err := backup.SnapshotStream(ctx, src.NC, bus.EventsStream, path); err == nil {
		t.Error("a snapshot overwrote an existing file")
	}

	srv := bustest.Server(t) // no streams yet
	dst, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := backup.RestoreStream(ctx, dst.NC, s, path); err != nil {
		t.Fatalf("restore: %v", err)
	}
	str, err := dst.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil || info.State.Msgs != 300 || info.State.LastSeq != 300 {
		t.Fatalf("restored stream %+v, %v; want 300 messages up to seq 300", info.State, err)
	}
	ci, err := str.Consumer(ctx, "d")
	if err != nil {
		t.Fatalf("restored consumer: %v", err)
	}
	if got := ci.CachedInfo().AckFloor.Stream; got != 10 {
		t.Errorf("restored consumer acknowledged up to %d, want 10", got)
	}
	if err := backup.RestoreStream(ctx, dst.NC, s, path); err == nil {
		t.Error("restoring over an existing stream succeeded")
	}
}

// Restore refuses a directory without a manifest (an unfinished backup)
// and a data dir that is not empty.
func TestRestoreRefuses(t *testing.T) {
	ctx := context.Background()
	unfinished := t.TempDir()
	if _, err := backup.Restore(ctx, unfinished, filepath.Join(t.TempDir(), "d"), nil); err == nil || !strings.Contains(err.Error(), "not a finished backup") {
		t.Errorf("restore of an unfinished backup = %v", err)
	}
	done := t.TempDir()
	if err := backup.WriteManifest(done, backup.Manifest{Version: backup.Version, Node: "n"}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, done, data, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore into a non-empty dir = %v", err)
	}
}
