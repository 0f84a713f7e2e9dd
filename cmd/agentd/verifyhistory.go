package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/history"
	"github.com/spf13/pflag"
)

// verifyHistory is `agentd verify-history --genesis ROOT_PUB FILE`: it
// verifies an exported ledger offline (ledger.VerifyHistory) and prints
// the report as JSON on stdout, for `agentctl keys verify-history`, which
// does not link the ledger (ledger/history). Exit 0 with a report, even
// one that says the history does not verify; 2 for bad arguments; 1 when
// the file cannot be read.
func verifyHistory(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("agentd "+history.Command, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	genesis := fs.String("genesis", "", "the genesis root's public key (root.pub)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "agentd: %s: %v\n", history.Command, err)
		return 2
	}
	if *genesis == "" || fs.NArg() != 1 {
		fmt.Fprintf(stderr, "agentd: usage: agentd %s --genesis ROOT_PUB FILE (what agentctl keys verify-history runs)\n", history.Command)
		return 2
	}
	root, err := trust.LoadRootPublic(*genesis)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %s: %v\n", history.Command, err)
		return 2
	}
	rep, err := ledger.VerifyHistory(fs.Arg(0), root)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %s: %v\n", history.Command, err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintf(stderr, "agentd: %s: %v\n", history.Command, err)
		return 1
	}
	return 0
}
