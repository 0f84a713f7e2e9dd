package cli

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	ledgerhistory "github.com/agentic-dev/agentic/ledger/history"
)

// The package's tests verify exports in-process, with the ledger agentd
// runs (agentctl itself asks an agentd process: ledgerhistory.Exec; the
// end-to-end test of cmd/agentd runs that path).
func init() {
	verifyExport = func(_ context.Context, _ func(string) string, file, genesisPath string) (ledgerhistory.Report, error) {
		root, err := trust.LoadRootPublic(genesisPath)
		if err != nil {
			return ledgerhistory.Report{}, fmt.Errorf("test verify: %w", err)
		}
		return ledger.VerifyHistory(file, root)
	}
}
