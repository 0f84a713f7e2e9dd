package ledgertest

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/ledger"
)

// Open opens a store in t.TempDir(), closed in t.Cleanup, logging Warn and
// above to t.Log.
func Open(t testing.TB) *ledger.Store {
	t.Helper()
	return OpenDir(t, t.TempDir())
}

// OpenDir opens (or reopens) the store in dir, closed in t.Cleanup. Closing
// it earlier is fine: Close is idempotent.
func OpenDir(t testing.TB, dir string) *ledger.Store {
	t.Helper()
	st, err := ledger.Open(dir, ledger.Options{Logger: Logger(t)})
	if err != nil {
		t.Fatalf("ledgertest: open %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("ledgertest: close %s: %v", dir, err)
		}
	})
	return st
}

// Logger returns a logger that writes Warn and above to t.Log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = logWriter{}
