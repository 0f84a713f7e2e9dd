package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// nodeHead is one ledger node's row of `ledger verify --all`.
type nodeHead struct {
	Node     string `json:"node"`
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	Applied  uint64 `json:"applied_stream_seq"`
	// Hash is the node's chain hash at the common seq.
	Hash   string `json:"hash"`
	Agrees bool   `json:"agrees"`
	Error  string `json:"error,omitempty"`
}

// headsReport is the outcome of `ledger verify --all`.
type headsReport struct {
	Agree     bool       `json:"agree"`
	CommonSeq uint64     `json:"common_seq"`
	Nodes     []nodeHead `json:"nodes"`
}

// zeroHash is the chain hash before the first record.
var zeroHash = strings.Repeat("0", 64)

// verifyAll gathers every ledger node's head, asks each for its hash at the
// lowest head, and prints whether they agree.
func (a *app) verifyAll(cmd *cobra.Command, c *api.Client, wait time.Duration) error {
	ctx := cmd.Context()
	answers, err := api.Gather[api.LedgerHead](ctx, c, api.MethodLedgerHead, api.HeadRequest{}, wait)
	if err != nil {
		return err
	}
	if len(answers) == 0 {
		return api.WithHint(fmt.Errorf("%w: no ledger node answered %s within %s", api.ErrTimeout, api.AllSubject(api.MethodLedgerHead), wait),
			"the ledger nodes may be busy: try again with a longer --wait")
	}
	rep := headsReport{Agree: true}
	first := true
	for _, ans := range answers {
		if ans.Err == nil && (first || ans.Data.Seq < rep.CommonSeq) {
			rep.CommonSeq, first = ans.Data.Seq, false
		}
	}
	count := map[string]int{}
	for _, ans := range answers {
		row := nodeHead{Node: ans.Node, HeadSeq: ans.Data.Seq, HeadHash: ans.Data.Hash, Applied: ans.Data.Applied}
		switch {
		case ans.Err != nil:
			row.Error = ans.Err.Error()
		case rep.CommonSeq == 0:
			row.Hash = zeroHash
		default:
			h, err := c.At(ans.Node).LedgerHead(ctx, rep.CommonSeq)
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				row.Error = err.Error()
			} else {
				row.Hash = h.AtHash
			}
		}
		if row.Error == "" {
			count[row.Hash]++
		}
		rep.Nodes = append(rep.Nodes, row)
	}
	for i := range rep.Nodes {
		r := &rep.Nodes[i]
		r.Agrees = r.Error == "" && (count[r.Hash] >= 2 || len(rep.Nodes) == 1)
		rep.Agree = rep.Agree && r.Agrees
	}
	if err := a.printHeads(rep); err != nil {
		return err
	}
	if !rep.Agree {
		return &exitError{code: ExitError}
	}
	return nil
}

func (a *app) printHeads(rep headsReport) error {
	if a.output != formatText {
		return a.writeJSON(rep)
	}
	agreeing := 0
	for _, r := range rep.Nodes {
		if r.Agrees {
			agreeing++
		}
	}
	fmt.Fprintf(a.env.Stdout, "common seq %d: %d of %d ledger nodes agree\n", rep.CommonSeq, agreeing, len(rep.Nodes))
	tw := a.table()
	fmt.Fprintf(tw, "NODE\tHEAD\tHASH AT %d\tAGREES\n", rep.CommonSeq)
	for _, r := range rep.Nodes {
		agrees, hash := "no", r.Hash
		if r.Agrees {
			agrees = "yes"
		}
		if r.Error != "" {
			hash, agrees = "-", "no: "+r.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", dash(r.Node), r.HeadSeq, hash, agrees)
	}
	return tw.Flush()
}
