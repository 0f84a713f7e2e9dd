package ledger_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// A snapshot that meets a full disk is an error (ErrSync, wrapping
// ENOSPC), never a crash; the store still reads what it holds, refuses
// later writes like after a failed Append, and closes.
func TestSnapshotOnAFullDisk(t *testing.T) {
	dir := tmpfs.Mount(t, 32<<20)
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{Logger: ledgertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kit := ledgertest.NewKit(t)
	var msgs []ledger.Message
	for i := range 5 {
		msgs = append(msgs, kit.Message(uint64(i+1), kit.Node, started("r1", 1)...))
	}
	mustAppend(t, st, msgs...)
	head, hash := st.Head()
	if err := st.SaveSnapshot("roles", head, []byte("state")); err != nil {
		t.Fatal(err)
	}

	tmpfs.Fill(t, dir, 0)
	big := bytes.Repeat([]byte("x"), 1<<20)
	var saveErr error
	for range 64 { // Pebble's preallocated WAL takes a few before one fails
		if saveErr = st.SaveSnapshot("big", head, big); saveErr != nil {
			break
		}
	}
	if !errors.Is(saveErr, ledger.ErrSync) || !errors.Is(saveErr, syscall.ENOSPC) {
		t.Fatalf("SaveSnapshot on a full disk = %v, want ErrSync wrapping ENOSPC", saveErr)
	}

	if s, h := st.Head(); s != head || h != hash {
		t.Errorf("head after the failed snapshot = %d, want %d", s, head)
	}
	if seq, data, err := st.LoadSnapshot("roles"); err != nil || seq != head || string(data) != "state" {
		t.Errorf("LoadSnapshot(roles) = %d, %q, %v; want %d, state", seq, data, err, head)
	}
	if got := collect(t, st.ScanRun("r1", 1)); len(got) != 5 {
		t.Errorf("ScanRun(r1) after the failed snapshot = %v, want 5 records", seqs(got))
	}
	if _, err := st.Append([]ledger.Message{kit.Message(6, kit.Node, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "s"}))}); !errors.Is(err, ledger.ErrSync) {
		t.Errorf("Append after a failed snapshot = %v, want ErrSync", err)
	}
	if err := st.SaveSnapshot("roles", head, []byte("again")); !errors.Is(err, ledger.ErrSync) {
		t.Errorf("SaveSnapshot after a failed one = %v, want ErrSync", err)
	}
	_ = st.Close() // Pebble may refuse to close cleanly after a failed WAL write
}
