package ledger

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger/history"
)

// VerifyHistory imports the export at file (what Store.Export writes)
// into a temporary ledger, removed after, and verifies it there with
// genesis as the genesis root: the hash chain, and every accepted event's
// signature judged by the roots the ledger trusted at its position. A
// history that does not verify is a Report with OK false; an error means
// the file could not be read or imported.
func VerifyHistory(file string, genesis *trust.Root) (history.Report, error) {
	f, err := os.Open(file)
	if err != nil {
		return history.Report{}, fmt.Errorf("ledger: verify history: %w", err)
	}
	defer f.Close()
	tmp, err := os.MkdirTemp("", "agentic-verify-history-")
	if err != nil {
		return history.Report{}, fmt.Errorf("ledger: verify history: %w", err)
	}
	defer os.RemoveAll(tmp)
	st, err := Import(tmp, f, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return history.Report{}, fmt.Errorf("ledger: verify history: read %s: %w", file, err)
	}
	defer st.Close()
	st.SetGenesis(genesis.Public)
	rep, err := st.Verify(envelope.NewVerifier(genesis))
	if err != nil {
		return history.Report{}, fmt.Errorf("ledger: verify history: %w", err)
	}
	return history.Report{OK: rep.OK, Events: rep.Events, Head: hex.EncodeToString(rep.Head[:]),
		FirstBadSeq: rep.FirstBadSeq, Error: rep.Err, Roots: st.Roots()}, nil
}
