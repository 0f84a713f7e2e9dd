package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/nodetest"
)

func TestDataDirLayoutVersion(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	n.Stop(t)
	b, err := os.ReadFile(filepath.Join(dir, node.FormatFile))
	if err != nil || strings.TrimSpace(string(b)) != "agentic-data 1" {
		t.Fatalf("FORMAT = %q, %v", b, err)
	}
	for _, tc := range []struct{ content, want string }{
		{"agentic-data 2\n", "layout 2"},
		{"hello\n", "does not hold a layout version"},
	} {
		if err := os.WriteFile(filepath.Join(dir, node.FormatFile), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		nd, err := node.New(nodetest.Config(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = nd.Start(context.Background())
		if !errors.Is(err, node.ErrDataFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("start on FORMAT %q = %v, want ErrDataFormat naming %q", tc.content, err, tc.want)
		}
		// Nothing was opened: the stores are untouched and the dir still
		// says what it said.
		if got, _ := os.ReadFile(filepath.Join(dir, node.FormatFile)); string(got) != tc.content {
			t.Errorf("FORMAT rewritten to %q", got)
		}
	}
}

// A second node on a data dir in use is refused before it starts anything
// (trust, nats-server, stores), naming the holder's pid; the lock goes
// with Stop, and a LOCK file left behind (by a kill -9) blocks nothing.
func TestOneNodePerDataDir(t *testing.T) {
	dir := t.TempDir()
	first := nodetest.Start(t, nodetest.Config(dir))
	second, err := node.New(nodetest.Config(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = second.Start(context.Background())
	want := fmt.Sprintf("data dir %s is in use by agentd pid %d (lock %s)", dir, os.Getpid(), filepath.Join(dir, node.LockFile))
	if !errors.Is(err, node.ErrDataDirInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second start = %v, want ErrDataDirInUse %q", err, want)
	}
	if second.NATSURL() != "" {
		t.Errorf("the refused node started a bus: %s", second.NATSURL())
	}
	// The first node is untouched by the attempt.
	if _, err := first.API.LedgerHeads(context.Background(), 200*time.Millisecond); err != nil {
		t.Errorf("first node after the refused start: %v", err)
	}
	first.Stop(t)
	if b, _ := os.ReadFile(filepath.Join(dir, node.LockFile)); len(b) != 0 {
		t.Errorf("LOCK after Stop holds %q, want it empty", b)
	}
	// A stale pid (the file is left by a crash: nobody holds the flock).
	if err := os.WriteFile(filepath.Join(dir, node.LockFile), []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := nodetest.Start(t, nodetest.Config(dir))
	if b, _ := os.ReadFile(filepath.Join(dir, node.LockFile)); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("LOCK holds %q, want this pid %d", b, os.Getpid())
	}
	again.Stop(t)
}
