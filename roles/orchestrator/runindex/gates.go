package runindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// gateView is the open gate of step i of r as gates.list shows it.
func gateView(r *core.Run, i int) apiwire.Gate {
	st := r.Steps[i]
	g := st.Gate
	spec := event.ApplyMemory(st.Spec, g.Memory) // the command as it will run
	return apiwire.Gate{Run: r.ID, Goal: r.Goal, Step: spec.ID, Attempt: g.Attempt, Revision: r.Revision,
		Kind: g.Kind, Subject: g.Subject, Policy: g.Policy, Verdict: g.Verdict, Spec: &spec,
		Approvals: g.Approvals, Approvers: g.Approvers, NotSubmitter: g.NotSubmitter, Submitter: r.Submitter,
		Opened: g.Opened, Expires: g.Expires, OnExpiry: g.OnExpiry, Reason: g.Reason, ToolHash: g.ToolHash}
}

// planGatePos is the place of a run's plan gate among its gates: after
// its steps'.
const planGatePos = 1<<32 - 1

// planGateView is the open plan gate of r as gates.list shows it.
func planGateView(r *core.Run) apiwire.Gate {
	g := r.Gate
	return apiwire.Gate{Run: r.ID, Goal: r.Goal, Revision: r.Revision, Kind: g.Kind, Subject: g.Subject, Policy: g.Policy,
		Verdict: g.Verdict, Approvals: g.Approvals, Approvers: g.Approvers, NotSubmitter: g.NotSubmitter,
		Submitter: r.Submitter, Opened: g.Opened, Expires: g.Expires, OnExpiry: g.OnExpiry, Reason: g.Reason}
}

// GateEntry is one open gate of a listing: its view as stored and the
// cursor that resumes the listing after it.
type GateEntry struct {
	Raw    json.RawMessage
	Cursor string
}

// Gates lists the open gates (steps held for operators, and plan gates),
// oldest run first, in plan order within a run and its plan gate last,
// lazily; of one run (an id or a unique
// prefix) when run is not "", and after the gate whose Cursor is after
// when that is not "". A bad cursor or run yields an error and ends it.
func (x *Index) Gates(run, after string) iter.Seq2[GateEntry, error] {
	return func(yield func(GateEntry, error) bool) {
		st, err := x.store()
		if err != nil {
			yield(GateEntry{}, err)
			return
		}
		prefix := []byte(prefixGate)
		if run != "" {
			sum, err := x.Run(run)
			if err != nil {
				yield(GateEntry{}, err)
				return
			}
			prefix = append(prefix, position(createdNanos(sum.CreatedAt), sum.ID)...)
		}
		lower := prefix
		if after != "" {
			pos, err := decodeCursor(after)
			if err != nil {
				yield(GateEntry{}, err)
				return
			}
			lower = append(append([]byte(prefixGate), pos...), 0) // the first key after it
			if bytes.Compare(lower, prefix) < 0 {
				lower = prefix
			}
		}
		for e, err := range st.IndexScan(Name, lower, prefixEnd(prefix), false) {
			if err != nil {
				yield(GateEntry{}, fmt.Errorf("runindex: list gates: %w", err))
				return
			}
			if !yield(GateEntry{Raw: e.Value, Cursor: encodeCursor(e.Key[len(prefixGate):])}, nil) {
				return
			}
		}
	}
}

// GatesPage answers gates.list: a page of open gates, cut by count and by
// encoded size under the connection's max payload.
func (x *Index) GatesPage(ctx context.Context, req apiwire.GatesRequest) (apiwire.Page[json.RawMessage], error) {
	if x == nil {
		return apiwire.Page[json.RawMessage]{}, ErrNotAttached
	}
	if req.Step != "" && req.Run == "" {
		return apiwire.Page[json.RawMessage]{}, fmt.Errorf("%w: a step is named within a run: give the run too", apiwire.ErrBadRequest)
	}
	p := apiwire.NewPager(apiwire.PageLimit(req.Limit, apiwire.DefaultGatesPage, apiwire.MaxGatesPage), apiwire.MaxPayload(ctx))
	last := ""
	for e, err := range x.Gates(req.Run, req.Cursor) {
		if err != nil {
			return apiwire.Page[json.RawMessage]{}, gatesError(req.Run, err)
		}
		if req.Step != "" {
			var g struct {
				Step string `json:"step"`
			}
			if json.Unmarshal(e.Raw, &g) != nil || g.Step != req.Step {
				continue
			}
		}
		ok, err := p.AddRaw(e.Raw)
		if err != nil {
			return apiwire.Page[json.RawMessage]{}, fmt.Errorf("runindex: list gates: %w", err)
		}
		if !ok {
			return p.Page(last, false), nil
		}
		last = e.Cursor
	}
	return p.Page("", true), nil
}

// gatesError gives an index error its API category.
func gatesError(run string, err error) error {
	switch {
	case errors.Is(err, ErrBadCursor):
		return fmt.Errorf("%w: cursor: %w", apiwire.ErrBadRequest, err)
	case errors.Is(err, ErrAmbiguous):
		return fmt.Errorf("%w: %w", apiwire.ErrAmbiguous, err)
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: no run matches %q", apiwire.ErrNotFound, run)
	}
	return fmt.Errorf("runindex: list gates: %w", err)
}

// OpenGates counts the open gates and returns when the oldest of them
// opened (zero when none is open): what the gate metrics show. It reads
// every open gate, which is live work, bounded by the runs in flight.
func (x *Index) OpenGates() (n int, oldest time.Time, err error) {
	for e, err := range x.Gates("", "") {
		if err != nil {
			return n, oldest, err
		}
		var g struct {
			Opened time.Time `json:"opened"`
		}
		if err := json.Unmarshal(e.Raw, &g); err != nil {
			return n, oldest, fmt.Errorf("runindex: read gate: %w", err)
		}
		n++
		if !g.Opened.IsZero() && (oldest.IsZero() || g.Opened.Before(oldest)) {
			oldest = g.Opened
		}
	}
	return n, oldest, nil
}
