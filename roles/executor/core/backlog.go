package core

// backlog is the rule that the executor starts nothing until it has read
// what its consumer held when it (re)started: a node back after being
// declared dead finds, behind an assignment it never started, the cancel
// that superseded it — and must read that cancel before starting the
// attempt. It is armed at start (Begin), when the consumer is made again
// (ConsumerLost) and after a stall (Tick).
//
// Its end is seen two ways: the first deliveries above the consumer's
// delivered sequence at Begin are counted until its pending count was
// handled; and a watcher the shell runs reports the arm read
// (BacklogRead) — which also covers messages deleted from the stream
// meanwhile, and the re-arms, which do not count.
type backlog struct {
	armed bool
	// gen numbers the arms; a watcher reports the one it watched.
	gen int
	// after is the consumer's delivered stream sequence when armed; left
	// the first deliveries above it still to handle (< 0: not counted).
	after uint64
	left  int64
}

// arm starts the rule for a backlog of pending messages after delivered,
// and reports whether there is one.
func (b *backlog) arm(delivered, pending uint64) bool {
	b.gen++
	b.armed, b.after, b.left = pending > 0, delivered, int64(pending)
	return b.armed
}

// rearm starts the rule with the backlog left to the watcher.
func (b *backlog) rearm() {
	b.gen++
	b.armed, b.left = true, -1
}

// seen counts a handled delivery and reports whether it completed the
// backlog.
func (b *backlog) seen(seq, numDelivered uint64) bool {
	if !b.armed || b.left < 0 || seq <= b.after || numDelivered != 1 {
		return false
	}
	b.left--
	if b.left > 0 {
		return false
	}
	b.armed = false
	return true
}

// caughtUp ends the rule if gen is the current arm.
func (b *backlog) caughtUp(gen int) bool {
	if !b.armed || gen != b.gen {
		return false
	}
	b.armed = false
	return true
}
