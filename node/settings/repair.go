package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/nats-io/nats.go/jetstream"
)

// CheckStreamDrift is the name of the readiness check that a stream is
// configured as the cluster settings say (health.CheckStreams is the one
// that the streams exist). It does not block readiness: a drifted stream
// still carries events; it raises the STREAM_DRIFT alarm.
const CheckStreamDrift = "stream_drift"

// watched are the streams a Cluster keeps: the advisories about them
// start a comparison at once.
var watched = []string{bus.EventsStream, bus.LogsStream, bus.LeaderBucketStream}

// Checks are the node's readiness checks of the streams:
//
//   - health.CheckStreams (blocking, alarm STREAM_MISSING): every agentic
//     stream and the leader bucket exist. A deleted AGENTIC_EVENTS stops
//     every write of the cluster: the node is not ready, with the reason
//     "stream AGENTIC_EVENTS is missing (deleted?)".
//   - CheckStreamDrift (not blocking, alarm STREAM_DRIFT): the streams are
//     configured as the settings in force say.
//
// Both are set by Check, at once on a JetStream advisory about the
// streams, and pass until the node is live and has compared them. A fault
// the restore rule mended clears with the reason "restored" (the
// alarm.cleared says "restored: <the fault>").
func (c *Cluster) Checks() []health.Check {
	return []health.Check{
		{Name: health.CheckStreams, Blocking: true, Alarm: event.AlarmStreamMissing, Probe: c.missing.Probe, Changed: c.missing.Changed, Cleared: c.missing.ClearReason},
		{Name: CheckStreamDrift, Alarm: event.AlarmStreamDrift, Probe: c.drifted.Probe, Changed: c.drifted.Changed, Cleared: c.drifted.ClearReason},
	}
}

// seen records a stream's last sequence.
func (c *Cluster) seen(stream string, last uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.lastSeq[stream] = last
}

// firstSeq is where a deleted stream recreated under the restore rule
// continues: after the last message this node saw in it, and for
// AGENTIC_EVENTS after the last one its ledger folded, whichever is later.
// Starting after every message any ledger may have folded keeps the
// ledgers' rule that a stream sequence at or below the one applied is a
// redelivery (ledger.Store.Append) from skipping new events; a ledger
// that folded less records the missing sequences as a gap.
func (c *Cluster) firstSeq(stream string) uint64 {
	c.mu.Lock()
	last := c.mu.lastSeq[stream]
	c.mu.Unlock()
	if stream == bus.EventsStream && c.cfg.AppliedSeq != nil {
		last = max(last, c.cfg.AppliedSeq())
	}
	return last + 1
}

// repair brings one stream back to the settings under the restore rule:
// a deleted stream is recreated with its sequence continuing (firstSeq).
// A drifted one is left for an administrator (Apply). It returns the
// drift left.
func (c *Cluster) repair(ctx context.Context, s Settings, want jetstream.StreamConfig, drift []Drift) ([]Drift, error) {
	if missing(drift) {
		first := c.firstSeq(want.Name)
		if err := bus.RecreateStream(ctx, c.cfg.JS, want, first); err != nil {
			return c.unmended(ctx, want.Name, drift, err)
		}
		c.log.Warn("stream restored: it was deleted, and is recreated with the cluster settings (streams repair rule: restore)",
			"stream", want.Name, "first_seq", first, "revision", s.Revision, "reason", reasonRestored,
			"lost", "messages the stream had acknowledged but no ledger had folded yet")
		return c.reconcile(ctx, s, want)
	}
	// A drifted stream is put back by an administrator (Apply): nodes may
	// create the streams, never update them (bus/natsauth). One behind
	// the settings was logged so (reconcile).
	if !behindIn(drift) {
		c.warnOnce("restore/"+want.Name+"/"+driftKey(drift), "stream drifts from the cluster settings; under the restore rule a ledger node recreates a deleted stream, an administrator puts a changed one back",
			"stream", want.Name, "drift", driftKey(drift), "hint", applyHint(nil))
	}
	return drift, nil
}

// repairLeader is repair for the leader bucket, which is compared on its
// TTL alone.
func (c *Cluster) repairLeader(ctx context.Context, s Settings, drift []Drift) ([]Drift, error) {
	name := bus.LeaderBucketStream
	if missing(drift) {
		if err := bus.RecreateLeaderBucket(ctx, c.cfg.JS, s.LeaseTTL, s.Revision, max(c.cfg.Replicas, 1)); err != nil {
			return c.unmended(ctx, name, drift, err)
		}
		c.log.Warn("leader bucket restored: it was deleted, and is recreated with the cluster settings (streams repair rule: restore)",
			"stream", name, "lease_ttl", s.LeaseTTL, "revision", s.Revision, "reason", reasonRestored)
		return c.reconcileLeader(ctx, s.Revision, s.LeaseTTL)
	}
	if !behindIn(drift) {
		c.warnOnce("restore/"+name+"/"+driftKey(drift), "leader bucket drifts from the cluster settings; an administrator puts it back",
			"stream", name, "drift", driftKey(drift), "hint", applyHint(nil))
	}
	return drift, nil
}

// unmended logs (once per drift) that a restore failed and returns the
// drift as it stands.
func (c *Cluster) unmended(ctx context.Context, stream string, drift []Drift, err error) ([]Drift, error) {
	if ctx.Err() != nil {
		return nil, err
	}
	c.warnOnce("restore/"+stream+"/"+driftKey(drift), "cannot restore the stream to the cluster settings",
		"stream", stream, "drift", driftKey(drift), "err", err, "hint", applyHint(err))
	return drift, nil
}

// remedy logs, once per deletion, how an operator recreates a deleted
// stream under the alarm rule: for AGENTIC_EVENTS, the configuration to
// create it with (nats stream add --config), its sequence continuing; a
// ledger node's start recreates it so too (node/reseed.go), an
// executor-only node's at sequence 1, which ledger nodes refuse.
func (c *Cluster) remedy(want jetstream.StreamConfig) {
	if want.Name != bus.EventsStream {
		c.warnOnce("remedy/"+want.Name, "stream is missing: a restart of agentd creates it again (streams repair rule alarm)", "stream", want.Name)
		return
	}
	want.FirstSeq = c.firstSeq(want.Name)
	cfg, err := json.Marshal(want)
	if err != nil {
		cfg = []byte(err.Error())
	}
	c.warnOnce(fmt.Sprintf("remedy/%s/%d", want.Name, want.FirstSeq), "stream is missing: every write of the cluster stops until it is back (streams repair rule alarm)",
		"stream", want.Name, "first_seq", want.FirstSeq, "config", string(cfg),
		"hint", "recreate it with its sequence continuing: save config to a file and run nats stream add --config FILE; "+
			"or restart a ledger node: its start recreates the stream continuing after its ledger's head (an executor-only node would create it at sequence 1, which ledger nodes refuse); "+
			"or set agentctl cluster settings set --streams-repair restore beforehand, so that nodes recreate it themselves")
}

func missing(drift []Drift) bool {
	return slices.ContainsFunc(drift, func(d Drift) bool { return d.Field == fieldExists })
}

// behindIn reports whether drift says the stream is behind the settings
// (FieldRevision).
func behindIn(drift []Drift) bool {
	return slices.ContainsFunc(drift, func(d Drift) bool { return d.Field == FieldRevision })
}

func driftKey(drift []Drift) string {
	parts := make([]string, len(drift))
	for i, d := range drift {
		parts[i] = d.Field + "=" + d.Actual
	}
	return strings.Join(parts, ",")
}

// reasonRestored is why a check passes again after the restore rule put
// a stream back: the log's reason, and the alarm.cleared's.
const reasonRestored = "restored"

// healthNote says what setHealth reports.
type healthNote int

const (
	// compared: the comparison's result.
	compared healthNote = iota
	// restored: a restore recreated a stream during this comparison; the
	// checks that pass again clear with reasonRestored.
	restored
)

// setHealth sets the streams' checks from the last comparison.
func (c *Cluster) setHealth(s Settings, note healthNote) {
	c.mu.Lock()
	var gone, drifted []string
	for _, name := range watched {
		for _, d := range c.mu.drift[name] {
			if d.Field == fieldExists {
				gone = append(gone, fmt.Sprintf("stream %s is missing (deleted?)", name))
				continue
			}
			drifted = append(drifted, fmt.Sprintf("stream %s %s is %s, the cluster settings say %s", name, d.Field, d.Actual, d.Expected))
		}
	}
	c.mu.Unlock()
	switch {
	case len(gone) == 0 && note == restored:
		c.missing.Clear(reasonRestored)
	case len(gone) == 0:
		c.missing.Set(nil)
	default:
		c.missing.Set(errors.New(strings.Join(gone, "; ")))
	}
	if len(drifted) == 0 {
		if note == restored {
			c.drifted.Clear(reasonRestored)
		} else {
			c.drifted.Set(nil)
		}
		return
	}
	rule := "streams repair rule alarm: " + adminFix
	if s.Restores() {
		rule = "streams repair rule restore: nodes recreate a deleted stream only; " + adminFix
	}
	c.drifted.Set(fmt.Errorf("%s (%s)", strings.Join(drifted, "; "), rule))
}

// adminFix is how a changed or behind stream is brought to the settings:
// only an administrator may update a stream (bus/natsauth).
const adminFix = "an administrator applies the settings in force with agentctl cluster settings set --reapply (admin credentials), or records the stream's values with agentctl cluster settings set"

// driftHint is what the log says to do about a drift under the rule in
// force.
func driftHint(d Drift, s Settings) string {
	switch {
	case d.Field == fieldExists && s.Restores():
		return "the stream was deleted outside agentic; under the restore rule this node recreates it, its sequence continuing"
	case d.Field == fieldExists:
		return "the stream was deleted outside agentic; nodes do not recreate it while running (streams repair rule alarm): see docs/architecture.md, \"Streams\", for the remedy, or set --streams-repair restore"
	case d.Field == FieldRevision:
		return "the stream is behind the cluster settings in force: nodes do not update streams; " + adminFix
	}
	return "the stream was changed outside agentic; nodes do not correct it (under either streams repair rule): " + adminFix
}
