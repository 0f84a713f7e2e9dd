package api

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/agentic-dev/agentic/bus/event"
)

// Events reads the ledger's events after seq after, in order, up to the
// head at the time of each page, through the export's pages — without
// their signed messages, which are never fetched: what a fold needs (a
// replay, a tool that refolds history), at the cost of the events alone.
// progress, if not nil, is called after each page with the last seq read
// and the head.
func (c *Client) Events(ctx context.Context, after uint64, progress func(seq, head uint64)) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		req := ExportRequest{After: after}
		for {
			var p ExportPage
			if err := c.Call(ctx, MethodLedgerExport, req, &p); err != nil {
				yield(event.Event{}, err)
				return
			}
			var last uint64
			for _, l := range p.Items {
				var ev event.Event
				if err := json.Unmarshal(l.Line, &ev); err != nil {
					yield(event.Event{}, fmt.Errorf("api: export line %d: %w", l.Seq, err))
					return
				}
				if !yield(ev, nil) {
					return
				}
				last = l.Seq
			}
			if progress != nil && last > 0 {
				progress(last, p.Head)
			}
			if p.End || p.Next == "" || len(p.Items) == 0 {
				return
			}
			req = ExportRequest{Cursor: p.Next}
		}
	}
}
