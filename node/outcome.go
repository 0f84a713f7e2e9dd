package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
)

// maxOutcomeRecords caps the records of one ledger.outcome answer (a
// message's events; a batch holds far fewer).
const maxOutcomeRecords = 1000

// outcome answers ledger.outcome: the records the message at a stream
// sequence made. Every record carries the stream sequence of its message
// and the ledger folds messages in stream order, so the records' stream
// sequences never decrease with their position: a search from the head
// finds the first one (firstRecordOf).
func (n *Node) outcome(ctx context.Context, req api.OutcomeRequest) (api.Outcome, error) {
	if req.StreamSeq == 0 {
		return api.Outcome{}, fmt.Errorf("%w: stream_seq must be at least 1", api.ErrBadRequest)
	}
	out := api.Outcome{Node: n.cfg.Name, StreamSeq: req.StreamSeq, Applied: n.awaitApplied(ctx, req.StreamSeq, min(req.Wait, api.MaxOutcomeWait)), Records: []api.OutcomeRecord{}}
	if !out.Judged() {
		return out, nil
	}
	head, _ := n.store.Head()
	lo, err := firstRecordOf(n.store.Get, head, req.StreamSeq)
	if err != nil {
		return api.Outcome{}, fmt.Errorf("node: ledger.outcome: %w", err)
	}
	for seq := lo; seq <= head && len(out.Records) < maxOutcomeRecords; seq++ {
		r, err := n.store.Get(seq)
		if err != nil {
			return api.Outcome{}, fmt.Errorf("node: ledger.outcome: %w", err)
		}
		ev := r.Event
		if ev.StreamSeq != req.StreamSeq {
			break
		}
		if ev.Type == event.Gap || ev.Type == event.RejectedSummary {
			// A summary counts refused messages (this one among them
			// when it is the run's last) that have no record of their
			// own: nothing recorded, so refused.
			continue
		}
		rec := api.OutcomeRecord{Seq: ev.Seq, Type: string(ev.Type), ID: ev.ID}
		if ev.Type == event.Rejected {
			var d event.RejectedData
			if err := json.Unmarshal(ev.Data, &d); err == nil {
				rec.Code, rec.Reason = string(d.Code), d.Reason
				if d.ClaimedID != "" {
					rec.ID = d.ClaimedID
				}
			}
		}
		out.Records = append(out.Records, rec)
	}
	return out, nil
}

// awaitApplied returns the stream sequence the ledger has folded up to,
// once it reaches seq or wait has passed (or ctx ends), whichever comes
// first: a ledger.outcome with a wait answers as soon as it can.
func (n *Node) awaitApplied(ctx context.Context, seq uint64, wait time.Duration) uint64 {
	if wait <= 0 {
		return n.store.AppliedStreamSeq()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		changed := n.follower.Changed()
		if applied := n.store.AppliedStreamSeq(); applied >= seq {
			return applied
		}
		select {
		case <-changed:
		case <-t.C:
			return n.store.AppliedStreamSeq()
		case <-ctx.Done():
			return n.store.AppliedStreamSeq()
		}
	}
}

// firstRecordOf is the ledger seq of the first record (of 1..head, read
// with get) whose stream sequence is at least streamSeq; head+1 when
// none is. It searches from the head back, doubling its step, then
// binary-searches the last step: a write's outcome is asked just after
// the ledger folded it, while the node works on what the write started,
// and its records are then the newest, found in about three reads
// instead of log2(head) reads and decodings.
func firstRecordOf(get func(uint64) (ledger.Record, error), head, streamSeq uint64) (uint64, error) {
	// Records before lo are before the message; records from hi on are
	// not.
	lo, hi := uint64(1), head+1
	for step := uint64(1); hi > lo; step *= 2 {
		probe := hi - min(step, hi-lo)
		r, err := get(probe)
		if err != nil {
			return 0, err
		}
		if r.Event.StreamSeq < streamSeq {
			lo = probe + 1
			break
		}
		hi = probe
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		r, err := get(mid)
		if err != nil {
			return 0, err
		}
		if r.Event.StreamSeq < streamSeq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}
