package planner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// SnapshotVersion is the snapshot format this version writes. It only moves
// forward; Restore refuses versions it does not know.
const SnapshotVersion = 4

// Version 2 added the goal's time and the claim that holds a run; version
// 3 the replan requests pending; version 4 the critique requests
// pending. An older snapshot is refused, so the
// planner folds again from the ledger.

// ErrSnapshotVersion: the snapshot was written by an unknown format version.
var ErrSnapshotVersion = errors.New("planner: unsupported snapshot version")

// snapshot is the serialized fold state: the runs still waiting for a plan.
// What a process does with them (jobs in flight, retry backoff) is not
// folded and not saved: a restored planner plans every pending run again,
// as one that folded from the start would.
type snapshot struct {
	Version int           `json:"version"`
	Seq     uint64        `json:"seq"`
	Pending []snapPending `json:"pending"`
}

// snapPending is a pending run. Bad is the decode error of a goal that did
// not decode; the run is rejected with it.
type snapPending struct {
	Run  string                  `json:"run"`
	Seq  uint64                  `json:"seq"`
	At   time.Time               `json:"at"`
	Goal event.GoalSubmittedData `json:"goal"`
	Bad  string                  `json:"bad,omitempty"`
	// ClaimBy and ClaimUntil are the claim that holds the run, if any.
	ClaimBy    string    `json:"claim_by,omitempty"`
	ClaimUntil time.Time `json:"claim_until,omitzero"`
	// Replan is the leader's request for the next revision, for a replan.
	Replan *event.PlanReplanRequestedData `json:"replan,omitempty"`
	// Critique is the leader's request to judge a critique attempt, for
	// a critique.
	Critique *event.CritiqueRequestedData `json:"critique,omitempty"`
}

// SnapshotName is "planner".
func (p *Planner) SnapshotName() string { return event.RolePlanner }

// Snapshot returns the pending runs and the ledger position they reflect.
// Equal states give equal bytes (runs in goal order).
func (p *Planner) Snapshot() (uint64, []byte, error) {
	snap := snapshot{Version: SnapshotVersion, Seq: p.folded, Pending: []snapPending{}}
	p.mu.Lock()
	for _, r := range p.mu.runs.pending {
		sp := snapPending{Run: r.id, Seq: r.seq, At: r.at, Goal: r.goal, Replan: r.replan, Critique: r.critique}
		if r.bad != nil {
			sp.Bad = r.bad.Error()
		}
		if r.claim != nil {
			sp.ClaimBy, sp.ClaimUntil = r.claim.by, r.claim.until
		}
		snap.Pending = append(snap.Pending, sp)
	}
	p.mu.Unlock()
	slices.SortFunc(snap.Pending, func(a, b snapPending) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Run, b.Run))
	})
	b, err := json.Marshal(snap)
	if err != nil {
		return 0, nil, fmt.Errorf("planner: marshal snapshot at seq %d: %w", snap.Seq, err)
	}
	return snap.Seq, b, nil
}

// Restore replaces the pending runs with a snapshot's. A snapshot of an
// unknown version, or one that does not decode or holds an empty or
// repeated run id, is refused and the state is left as it was.
func (p *Planner) Restore(data []byte) error {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("planner: unmarshal snapshot: %w", err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: %d (want %d)", ErrSnapshotVersion, snap.Version, SnapshotVersion)
	}
	rs := newRuns()
	for i, sp := range snap.Pending {
		if sp.Run == "" {
			return fmt.Errorf("planner: unmarshal snapshot: pending run %d has no id", i)
		}
		r := &pending{id: sp.Run, seq: sp.Seq, at: sp.At, goal: sp.Goal, replan: sp.Replan, critique: sp.Critique}
		if sp.Bad != "" {
			r.bad = errors.New(sp.Bad)
		}
		if sp.ClaimBy != "" {
			r.claim = &claim{by: sp.ClaimBy, until: sp.ClaimUntil}
		}
		if !rs.submit(r) {
			return fmt.Errorf("planner: unmarshal snapshot: run %s appears twice", r.key())
		}
	}
	p.mu.Lock()
	p.mu.runs = rs
	p.mu.Unlock()
	p.folded = snap.Seq
	return nil
}
