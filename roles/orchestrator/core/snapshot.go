package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// SnapshotVersion is the snapshot format this version writes. It only moves
// forward; UnmarshalSnapshot refuses versions it does not know (the holder
// then folds from the start). Version 2: State holds live runs only.
// Version 3: runs and steps carry codes (a version-2 state lacks those the
// fold would have given). Version 4: membership (Nodes), executors'
// queues, capabilities and states, and what reassignment needs of steps
// (SlotAt above all: a version-3 state would take every assigned attempt
// for one that never started). Version 5: the policy in force (its text,
// parsed again when read), gates, approvals, edits, paused runs. Version
// 6: what compensation needs of steps (end positions, file edits) and the
// compensation steps a run added. Version 7: replanning (the goal's
// text, the replans asked, the revision waited for, failed steps' output
// tails and replan marks). Version 8: the planning setting in force and
// what the planners said of the revision a run waits for (the no-planner
// rule), and the attempts revisions retired that compensation undoes.
const SnapshotVersion = 8

// ErrSnapshotVersion: the snapshot was written by an unknown format version.
var ErrSnapshotVersion = errors.New("orchestrator: unsupported snapshot version")

// snapshot is the serialized form of a State.
type snapshot struct {
	Version int    `json:"version"`
	State   *State `json:"state"`
}

// MarshalSnapshot encodes the state as JSON. Equal states give equal bytes
// (maps are written with sorted keys), which tests use to compare states.
func (s *State) MarshalSnapshot() ([]byte, error) {
	b, err := json.Marshal(snapshot{Version: SnapshotVersion, State: s})
	if err != nil {
		return nil, fmt.Errorf("orchestrator: marshal snapshot at seq %d: %w", s.Seq, err)
	}
	return b, nil
}

// UnmarshalSnapshot decodes a snapshot written by MarshalSnapshot and
// rebuilds the indexes a State keeps beside its serialized fields.
func UnmarshalSnapshot(b []byte) (*State, error) {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, fmt.Errorf("orchestrator: unmarshal snapshot: %w", err)
	}
	if snap.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w: %d (want %d)", ErrSnapshotVersion, snap.Version, SnapshotVersion)
	}
	s := snap.State
	if s == nil {
		return nil, fmt.Errorf("orchestrator: unmarshal snapshot: no state")
	}
	if s.Runs == nil {
		s.Runs = map[string]*Run{}
	}
	if s.Executors == nil {
		s.Executors = map[string]*Executor{}
	}
	if s.Nodes == nil {
		s.Nodes = map[string]*Node{}
	}
	if p := s.Policy; p != nil {
		parsed, ok := parsePolicy(p.Text, p.Hash, p.Version)
		if !ok {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: policy version %d does not parse to its hash %s", p.Version, p.Hash)
		}
		p.parsed = parsed
	}
	for id, ex := range s.Executors {
		if ex == nil {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: executor %q is null", id)
		}
	}
	for id, n := range s.Nodes {
		if n == nil {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: node %q is null", id)
		}
	}
	for id, r := range s.Runs {
		if r == nil || r.ID != id {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %q is missing or misfiled", id)
		}
		if !r.Status.Known() {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %s has unknown status %q", id, r.Status)
		}
		if r.Terminal() {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %s is %s, and a state holds live runs only", id, r.Status)
		}
		for i, st := range r.Steps {
			if st == nil {
				return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %s: step %d is null", id, i)
			}
			if !st.Status.Known() {
				return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %s: step %d has unknown status %q", id, i, st.Status)
			}
		}
		if slices.Contains(r.Retired, nil) {
			return nil, fmt.Errorf("orchestrator: unmarshal snapshot: run %s: a retired step is null", id)
		}
		r.buildIndex()
	}
	s.indexNodes()
	return s, nil
}
