// Package health is a node's readiness: the checks its components offer
// (JetStream reachable and writable, streams and consumers as configured,
// a leader known, the outbox draining, the ledger verified, disk space,
// clock skew), their last results, and the alarms a failing check raises
// and clears (event.AlarmData), in etcd's model: raised once when the fault
// is found, cleared once when its cause is gone.
//
// Components offer checks as values of Check; they keep their own state
// and Probe only reads it, so a probe is cheap and never blocks the loop
// that runs every check.
package health

import (
	"context"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Check names: the keys of /readyz, node.info and `agentctl node ls`.
const (
	CheckJetStream  = "jetstream"  // JetStream reachable and writable
	CheckStreams    = "streams"    // the agentic streams exist, configured as the settings say
	CheckConsumer   = "consumer"   // the executor's durable consumer exists and delivers
	CheckLeader     = "leader"     // a leader holds a live lease (within the lease TTL)
	CheckOutbox     = "outbox"     // the outbox publishes what the node emits
	CheckLedger     = "ledger"     // the ledger caught up with the stream
	CheckIntegrity  = "integrity"  // the ledger's chain verified at start, its store readable
	CheckDisk       = "disk"       // the data dir above its free-space floor
	CheckClock      = "clock"      // the node's clock within the protocol leeway of the stream's
	CheckCredential = "credential" // the node's credential not expired nor about to expire
)

// Check is one readiness check a component offers.
type Check struct {
	// Name names the check (one of the Check* constants).
	Name string
	// Blocking says the check guards progress: while it fails the node is
	// not ready. A non-blocking check is reported, and may raise an alarm,
	// but leaves readiness alone.
	Blocking bool
	// Alarm is the alarm raised while the check fails; "" raises none.
	Alarm event.Alarm
	// Probe returns nil when the check passes, or an error whose text is
	// the reason shown to operators. It must be cheap and return quickly:
	// it reads state the component keeps.
	Probe func(ctx context.Context) error
	// Changed, if set, returns a channel closed when the result may have
	// changed (State.Changed), so that the monitor probes at once.
	Changed func() <-chan struct{}
	// Cleared, if set, returns why the check passes again when its
	// component mended the fault ("restored"; State.ClearReason), or ""
	// when the cause simply went away. The monitor reads it when the
	// check passes and puts it in the Reason of the alarm.cleared it
	// emits ("restored: <the fault>" instead of "cause gone: <the
	// fault>").
	Cleared func() string
}

// Status is a check's last result.
type Status struct {
	// Name is the check's name.
	Name string `json:"name"`
	// OK says the check passed.
	OK bool `json:"ok"`
	// Blocking: a failure makes the node not ready.
	Blocking bool `json:"blocking,omitempty"`
	// Reason says what is wrong (empty when OK).
	Reason string `json:"reason,omitempty"`
	// Alarm is the alarm in force for this check, if any.
	Alarm event.Alarm `json:"alarm,omitempty"`
	// Since is when the check entered its present state.
	Since time.Time `json:"since,omitzero"`
}

// State is the result of an event-driven check: the component sets it as
// it learns (a consumer found deleted, then made again) and the check's
// Probe reads it. A failure set and cleared again before anyone probed is
// still returned by the next Probe, once, so that a fault healed at once
// still raises its alarm and clears it. The zero State passes. Safe for
// concurrent use.
type State struct {
	mu      sync.Mutex
	cur     error
	seen    bool   // Probe returned cur
	missed  error  // a failure cleared before Probe saw it
	cleared string // why the check passes again (Clear)
	changed chan struct{}
}

// Set records the check's result: nil passes. A failure forgets the
// reason of an earlier Clear, and so does a pass after a failure (the
// cause went away); a pass while passing keeps it.
func (s *State) Set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.cur != nil {
		s.cleared = ""
	}
	s.set(err)
}

// Clear records that the check passes because the component mended the
// fault, and how (reason, e.g. "restored"): it is Set(nil), and
// ClearReason returns reason until the check fails again.
func (s *State) Clear(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(nil)
	s.cleared = reason
}

// ClearReason returns the reason of the last Clear, or "" (a failure, or
// a pass after one, since). It has the signature of Check.Cleared.
func (s *State) ClearReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleared
}

// set records err (s.mu held).
func (s *State) set(err error) {
	if err == nil && s.cur != nil && !s.seen && s.missed == nil {
		s.missed = s.cur
	}
	if err != nil {
		s.missed = nil
	}
	s.cur, s.seen = err, false
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Probe returns the result to report: a failure nobody saw yet (then
// Changed fires, so that the present result is probed soon), else the
// present one. It has the signature of Check.Probe.
func (s *State) Probe(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missed; err != nil {
		// The present result differs from the one returned: have a
		// monitor probe again soon.
		s.missed = nil
		if s.changed != nil {
			close(s.changed)
			s.changed = nil
		}
		return err
	}
	s.seen = true
	return s.cur
}

// Changed returns a channel closed at the next Set, so that a monitor can
// probe at once instead of at its next tick.
func (s *State) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}
