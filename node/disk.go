package node

import (
	"fmt"

	"github.com/agentic-dev/agentic/node/diskspace"
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

// diskErr is why the node's writes wait for disk space: the data dir
// below its floor, the outbox waiting out a full disk, or the embedded
// JetStream stopped by one (nil: none).
func (n *Node) diskErr() error {
	if n.disk != nil {
		if err := n.disk.Err(); err != nil {
			return err
		}
	}
	if n.outbox != nil {
		if err := n.outbox.NoSpace(); err != nil {
			return fmt.Errorf("outbox: waiting for disk space: %w", err)
		}
	}
	if n.embedded != nil {
		if err := n.embedded.JetStreamErr(); err != nil {
			return err
		}
	}
	return nil
}

// diskPaused is the roles' Paused hook: the data dir below its floor.
func (n *Node) diskPaused() error { return n.disk.Err() }

// stopDisk stops the free-space watch.
func (n *Node) stopDisk() {
	if n.disk != nil {
		n.disk.Stop()
	}
}
