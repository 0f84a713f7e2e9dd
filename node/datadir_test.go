package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
