package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// SnapshotVersion is the snapshot format this version writes. It only moves
// forward; Restore refuses versions it does not know.
const SnapshotVersion = 1

// ErrSnapshotVersion: the snapshot was written by an unknown format version.
var ErrSnapshotVersion = errors.New("settings: unsupported snapshot version")

// snapshot is the serialized fold state: the cluster.settings event in
// force, if any.
type snapshot struct {
	Version  int                        `json:"version"`
	Seq      uint64                     `json:"seq"`
	Settings *event.ClusterSettingsData `json:"settings,omitempty"`
	Event    string                     `json:"event,omitempty"`
	EventSeq uint64                     `json:"event_seq,omitempty"`
	Time     time.Time                  `json:"time,omitzero"`
	By       string                     `json:"by,omitempty"`
}

// SnapshotName is "cluster-settings".
func (c *Cluster) SnapshotName() string { return "cluster-settings" }

// Snapshot returns the settings in force and the ledger position they
// reflect.
func (c *Cluster) Snapshot() (uint64, []byte, error) {
	c.mu.Lock()
	r := c.mu.rec
	c.mu.Unlock()
	snap := snapshot{Version: SnapshotVersion, Seq: c.folded}
	if r.event != "" {
		d := r.settings.Data()
		snap.Settings, snap.Event, snap.EventSeq, snap.Time, snap.By = &d, r.event, r.seq, r.time, r.by
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return 0, nil, fmt.Errorf("settings: marshal snapshot at seq %d: %w", snap.Seq, err)
	}
	return snap.Seq, b, nil
}

// Restore replaces the settings in force with a snapshot's. A snapshot of
// an unknown version, or one that does not decode or holds invalid
// settings, is refused and the state is left as it was.
func (c *Cluster) Restore(data []byte) error {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("settings: unmarshal snapshot: %w", err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: %d (want %d)", ErrSnapshotVersion, snap.Version, SnapshotVersion)
	}
	r := record{settings: DefaultWith(c.cfg.Replicas)}
	if snap.Settings != nil {
		s, err := FromData(*snap.Settings)
		if err != nil {
			return fmt.Errorf("settings: unmarshal snapshot: %w", err)
		}
		if snap.Event == "" || s.Revision == 0 {
			return errors.New("settings: unmarshal snapshot: settings without their event or revision")
		}
		r = record{settings: s, event: snap.Event, seq: snap.EventSeq, time: snap.Time, by: snap.By}
	}
	c.mu.Lock()
	c.mu.rec = r
	c.mu.dirty = true
	c.mu.Unlock()
	c.folded = snap.Seq
	return nil
}
