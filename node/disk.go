package node

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/health"
)

// startDisk starts watching the data dir's free space against its floor
// (disk.floor). A node started below the floor starts read-only: it serves
// queries and says why it is not ready, takes no work and appends nothing
// to its ledger until space returns, and then carries on by itself.
func (n *Node) startDisk() error {
	floor, err := n.cfg.DiskFloor()
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.disk, err = diskspace.New(diskspace.Config{Dir: n.cfg.Data, Floor: floor, Logger: n.log.With("component", "disk")})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.disk.Err(); err != nil {
		n.log.Warn("starting read-only: no new work, no ledger appends until the data dir has space again", "err", err)
	}
	n.disk.Start()
	return nil
}

// diskChecks is the disk check: the data dir below its floor (the
// monitor's, event-driven), and the writers waiting out a full disk met
// anyway: the outbox, and the embedded JetStream until it is restarted
// (nats-server still answers JetStream requests while a stream's store
// has failed, so the jetstream check does not see it).
func (n *Node) diskChecks() []health.Check {
	cs := n.disk.Checks()
	floor := cs[0].Probe
	cs[0].Probe = func(ctx context.Context) error {
		if err := floor(ctx); err != nil {
			return err
		}
		if err := n.outbox.NoSpace(); err != nil {
			return fmt.Errorf("outbox: waiting for disk space: %w", err)
		}
		if n.embedded != nil {
			if err := n.embedded.JetStreamErr(); err != nil {
				return err
			}
		}
		return nil
	}
	return cs
}

// diskPaused is the roles' Paused hook: the data dir below its floor.
func (n *Node) diskPaused() error { return n.disk.Err() }

// stopDisk stops the free-space watch.
func (n *Node) stopDisk() {
	if n.disk != nil {
		n.disk.Stop()
	}
}
