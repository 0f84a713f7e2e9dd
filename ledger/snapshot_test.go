package ledger_test

import (
	"errors"
	"testing"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

func TestSnapshots(t *testing.T) {
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	kit := ledgertest.NewKit(t)
	mustAppend(t, st, kit.Message(1, kit.Node, started("r", 4)...))

	if _, _, err := st.LoadSnapshot("orchestrator"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("LoadSnapshot of none = %v, want ErrNotFound", err)
	}
	if err := st.SaveSnapshot("orchestrator", 5, []byte("x")); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("snapshot beyond head = %v, want ErrInvalid", err)
	}
	if err := st.SaveSnapshot("", 1, []byte("x")); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("snapshot without name = %v, want ErrInvalid", err)
	}
	if err := st.SaveSnapshot("orchestrator", 2, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSnapshot("orchestrator", 4, []byte("four")); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSnapshot("memory", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	seq, data, err := st.LoadSnapshot("orchestrator")
	if err != nil || seq != 4 || string(data) != "four" {
		t.Errorf("LoadSnapshot(orchestrator) = %d %q %v, want 4 four", seq, data, err)
	}
	seq, data, err = st.LoadSnapshot("memory")
	if err != nil || seq != 3 || len(data) != 0 {
		t.Errorf("LoadSnapshot(memory) = %d %q %v", seq, data, err)
	}
	// Snapshots are not records: the chain is untouched.
	if rep, err := st.Verify(kit.Verifier); err != nil || !rep.OK || rep.Events != 4 {
		t.Errorf("Verify = %+v %v", rep, err)
	}
}
