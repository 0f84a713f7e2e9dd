package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SnapshotVersion is the snapshot format this version writes. It only
// moves forward; Restore refuses versions it does not know. Version 2
// adds each node's alarms in force; a version 1 snapshot (none) is still
// read.
const SnapshotVersion = 2

// ErrSnapshotVersion: the snapshot was written by an unknown format
// version.
var ErrSnapshotVersion = errors.New("nodes: unsupported snapshot version")

type snapshot struct {
	Version int        `json:"version"`
	Seq     uint64     `json:"seq"`
	Epoch   uint64     `json:"epoch"`
	Nodes   []snapNode `json:"nodes"`
}

type snapNode struct {
	Node
	DrainInc string `json:"drain_inc,omitempty"`
	Changed  uint64 `json:"changed"`
}

// SnapshotName is "nodes".
func (n *Nodes) SnapshotName() string { return "nodes" }

// Snapshot returns the model and the ledger position it reflects.
func (n *Nodes) Snapshot() (uint64, []byte, error) {
	snap := snapshot{Version: SnapshotVersion, Seq: n.folded, Epoch: n.epoch, Nodes: make([]snapNode, 0, len(n.nodes))}
	for _, nd := range n.nodes {
		snap.Nodes = append(snap.Nodes, snapNode{Node: *nd, DrainInc: nd.drainInc, Changed: nd.changed})
	}
	slices.SortFunc(snap.Nodes, func(a, b snapNode) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(snap)
	if err != nil {
		return 0, nil, fmt.Errorf("nodes: marshal snapshot at seq %d: %w", snap.Seq, err)
	}
	return snap.Seq, b, nil
}

// Restore replaces the model with a snapshot's. A snapshot of an unknown
// version, one that does not decode, or one with unnamed, repeated or too
// many nodes is refused and the model is left as it was.
func (n *Nodes) Restore(data []byte) error {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("nodes: unmarshal snapshot: %w", err)
	}
	if snap.Version != SnapshotVersion && snap.Version != 1 {
		return fmt.Errorf("%w: %d (want %d)", ErrSnapshotVersion, snap.Version, SnapshotVersion)
	}
	if len(snap.Nodes) > MaxNodes {
		return fmt.Errorf("nodes: unmarshal snapshot: %d nodes, at most %d", len(snap.Nodes), MaxNodes)
	}
	m := make(map[string]*Node, len(snap.Nodes))
	for _, sn := range snap.Nodes {
		if sn.Name == "" || m[sn.Name] != nil {
			return fmt.Errorf("nodes: unmarshal snapshot: node %q unnamed or repeated", sn.Name)
		}
		nd := sn.Node
		if len(nd.Alarms) > MaxAlarms {
			return fmt.Errorf("nodes: unmarshal snapshot: node %s: %d alarms, at most %d", sn.Name, len(nd.Alarms), MaxAlarms)
		}
		for i, a := range nd.Alarms {
			if a.Alarm == "" || a.Node != sn.Name || (i > 0 && nd.Alarms[i-1].Alarm >= a.Alarm) {
				return fmt.Errorf("nodes: unmarshal snapshot: node %s: alarms unnamed, about another node, or out of order", sn.Name)
			}
		}
		nd.drainInc, nd.changed = sn.DrainInc, sn.Changed
		m[sn.Name] = &nd
	}
	n.nodes, n.folded, n.epoch, n.dirty = m, snap.Seq, snap.Epoch, true
	n.Settled(false)
	return nil
}
