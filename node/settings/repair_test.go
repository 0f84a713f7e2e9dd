package settings_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

// check returns the named check of the kit's Cluster.
func (k *kit) check(t *testing.T, name string) health.Check {
	t.Helper()
	for _, c := range k.c.Checks() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q", name)
	return health.Check{}
}

// failing waits until the check fails with a reason containing want.
func (k *kit) failing(t *testing.T, name, want string) string {
	t.Helper()
	c := k.check(t, name)
	var last error
	poll.Eventually(t, 10*time.Second, "check "+name+" to fail with "+want, func() bool {
		last = c.Probe(context.Background())
		return last != nil && strings.Contains(last.Error(), want)
	})
	return last.Error()
}

// passing waits until the check passes.
func (k *kit) passing(t *testing.T, name string) {
	t.Helper()
	c := k.check(t, name)
	poll.Eventually(t, 10*time.Second, "check "+name+" to pass", func() bool { return c.Probe(context.Background()) == nil })
}

// restore folds settings at rev with the restore rule, waits until the
// streams are compared with them, and applies them as an administrator
// does after agentctl cluster settings set (kit.apply).
func (k *kit) restore(t *testing.T, rev uint64) {
	t.Helper()
	d := settings.Default().Data()
	d.Revision, d.Streams.Repair = rev, event.StreamsRepairRestore
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, rev)
	k.apply(t)
}

func TestChecksOffered(t *testing.T) {
	c := settings.New(settings.Config{})
	checks := c.Checks()
	if len(checks) != 2 ||
		checks[0].Name != health.CheckStreams || !checks[0].Blocking || checks[0].Alarm != event.AlarmStreamMissing ||
		checks[1].Name != settings.CheckStreamDrift || checks[1].Blocking || checks[1].Alarm != event.AlarmStreamDrift {
		t.Fatalf("checks %+v", checks)
	}
	for _, ch := range checks {
		if err := ch.Probe(context.Background()); err != nil || ch.Changed == nil {
			t.Errorf("%s before any comparison: %v", ch.Name, err)
		}
	}
}

// TestLoweredLimitRaisesDriftAtOnce: max_msgs lowered behind the node's
// back raises STREAM_DRIFT from the JetStream advisory (the periodic
// comparison is an hour away), and under the alarm rule the stream is
// left as it is until an operator puts it back.
func TestLoweredLimitRaisesDriftAtOnce(t *testing.T) {
	k := newKit(t)
	k.c.Settled(true)
	k.checked(t, 0)
	k.passing(t, settings.CheckStreamDrift)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 100 })
	reason := k.failing(t, settings.CheckStreamDrift, "stream AGENTIC_EVENTS max_msgs is 100, the cluster settings say unlimited")
	if !strings.Contains(reason, "streams repair rule alarm") {
		t.Errorf("reason %q does not name the rule", reason)
	}
	if err := k.check(t, health.CheckStreams).Probe(context.Background()); err != nil {
		t.Errorf("streams check fails on drift: %v", err)
	}
	k.c.Check(context.Background())
	if got := k.stream(t, bus.EventsStream).MaxMsgs; got != 100 {
		t.Fatalf("alarm rule corrected the stream: max msgs %d", got)
	}
	k.failing(t, settings.CheckStreamDrift, "max_msgs is 100")
	// An operator puts it back: the advisory clears the alarm.
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 })
	k.passing(t, settings.CheckStreamDrift)
	if len(k.log.Find("stream drift resolved")) != 1 {
		t.Error("resolution not logged")
	}
}

// TestRestoreRuleLeavesAChangedStream: under the restore rule a node
// recreates a deleted stream, but may not update one (only an
// administrator may): a changed stream stays drift, its alarm raised and
// not cleared, until an administrator applies the settings again.
func TestRestoreRuleLeavesAChangedStream(t *testing.T) {
	k := newKit(t)
	k.restore(t, 1)
	if in := k.c.InForce(); in.Streams.Repair != event.StreamsRepairRestore {
		t.Fatalf("repair rule in force %q", in.Streams.Repair)
	}
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) {
		c.MaxMsgs = 100
		c.MaxMsgsPerSubject = 5
		c.Discard = jetstream.DiscardNew
	})
	reason := k.failing(t, settings.CheckStreamDrift, "stream AGENTIC_EVENTS discard is DiscardNew, the cluster settings say DiscardOld")
	if !strings.Contains(reason, "max_msgs is 100") || !strings.Contains(reason, "streams repair rule restore: nodes recreate a deleted stream only") ||
		!strings.Contains(reason, "agentctl cluster settings set --reapply") {
		t.Errorf("reason %q", reason)
	}
	for range 3 {
		k.c.Check(context.Background())
	}
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != 100 || c.MaxMsgsPerSubject != 5 || c.Discard != jetstream.DiscardNew {
		t.Fatalf("the node changed the stream: %+v", c)
	}
	k.failing(t, settings.CheckStreamDrift, "max_msgs is 100")
	if got := k.log.Find("stream drifts from the cluster settings; under the restore rule a ledger node recreates a deleted stream, an administrator puts a changed one back"); len(got) != 1 || got[0].Attrs["stream"] != bus.EventsStream {
		t.Fatalf("restore refusal logged as %+v, want once", got)
	}
	if got := k.log.Find("stream restored to the cluster settings (streams repair rule: restore)"); len(got) != 0 {
		t.Fatalf("a restore logged: %+v", got)
	}

	// An administrator applies the settings again: the stream is back,
	// the alarm clears (the cause gone, not restored by the rule).
	applied := k.apply(t)
	if !applied[0].Updated || applied[1].Updated || applied[2].Updated {
		t.Fatalf("applied %+v, want the events stream alone updated", applied)
	}
	k.passing(t, settings.CheckStreamDrift)
	if r := k.check(t, settings.CheckStreamDrift).Cleared(); r != "" {
		t.Errorf("drift check's clear reason %q, want none (cause gone)", r)
	}
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != -1 || c.MaxMsgsPerSubject != -1 || c.Discard != jetstream.DiscardOld || bus.SettingsRevision(c) != 1 || !c.DenyDelete {
		t.Fatalf("stream after apply %+v", c)
	}
}

// TestDeletedStreamIsMissing: a deleted stream fails the blocking streams
// check with its reason; under the alarm rule it is not made again.
func TestDeletedStreamIsMissing(t *testing.T) {
	k := newKit(t)
	for range 3 {
		if _, err := k.js.Publish(context.Background(), event.SubjectPrefix+"test", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	k.c.Settled(true)
	k.checked(t, 0)
	if err := k.js.DeleteStream(context.Background(), bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	if reason := k.failing(t, health.CheckStreams, "stream AGENTIC_EVENTS is missing (deleted?)"); reason != "stream AGENTIC_EVENTS is missing (deleted?)" {
		t.Errorf("reason %q", reason)
	}
	k.c.Check(context.Background())
	if _, err := k.js.Stream(context.Background(), bus.EventsStream); err == nil {
		t.Fatal("the alarm rule made the stream again")
	}
	k.failing(t, health.CheckStreams, "stream AGENTIC_EVENTS is missing (deleted?)")
	if got := k.log.Find("stream drifts from the cluster settings"); len(got) != 1 || !strings.Contains(got[0].Attrs["hint"], "nodes do not recreate it") {
		t.Errorf("deletion logged as %+v", got)
	}
	// The remedy the log gives: the configuration to create it with, its
	// sequence continuing (what nats stream add --config does).
	got := k.log.Find("stream is missing: every write of the cluster stops until it is back (streams repair rule alarm)")
	if len(got) != 1 || got[0].Attrs["first_seq"] != "4" || !strings.Contains(got[0].Attrs["hint"], "nats stream add --config") {
		t.Fatalf("remedy logged as %+v", got)
	}
	var cfg jetstream.StreamConfig
	if err := json.Unmarshal([]byte(got[0].Attrs["config"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := k.js.CreateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("%+v", k.log.Messages(slog.LevelDebug))
		}
	}()
	k.passing(t, health.CheckStreams)
	k.passing(t, settings.CheckStreamDrift)
	if ack, err := k.js.Publish(context.Background(), event.SubjectPrefix+"test", []byte("y")); err != nil || ack.Sequence != 4 {
		t.Fatalf("publish after the remedy: %+v %v, want sequence 4", ack, err)
	}
}

// TestRestoreRecreatesDeletedStreamContinuing: under the restore rule a
// deleted AGENTIC_EVENTS is made again with its sequence continuing after
// both the last message the node saw and the last one its ledger folded.
func TestRestoreRecreatesDeletedStreamContinuing(t *testing.T) {
	var applied atomic.Uint64
	applied.Store(3)
	k := newKit(t, func(c *settings.Config) { c.AppliedSeq = applied.Load })
	ctx := context.Background()
	for range 5 {
		if _, err := k.js.Publish(ctx, event.SubjectPrefix+"test", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	k.restore(t, 1)
	recreated := func(first uint64) {
		t.Helper()
		if err := poll.Wait(10*time.Second, func() bool {
			s, err := k.js.Stream(ctx, bus.EventsStream)
			return err == nil && s.CachedInfo().State.FirstSeq == first
		}); err != nil {
			t.Fatalf("the stream not made again at %d: %v; log: %+v", first, err, k.log.Find("cannot restore the stream to the cluster settings"))
		}
		ack, err := k.js.Publish(ctx, event.SubjectPrefix+"test", []byte("y"))
		if err != nil || ack.Sequence != first {
			t.Fatalf("publish after recreation: %+v %v, want sequence %d", ack, err, first)
		}
		k.passing(t, health.CheckStreams)
	}
	// The node saw the stream at 5, its ledger folded 3: on at 6.
	if err := k.js.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	recreated(6)
	got := k.log.Find("stream restored: it was deleted, and is recreated with the cluster settings (streams repair rule: restore)")
	if len(got) != 1 || got[0].Attrs["first_seq"] != "6" || got[0].Attrs["reason"] != "restored" || got[0].Level != slog.LevelWarn {
		t.Fatalf("recreation logged as %+v", got)
	}
	if c := k.stream(t, bus.EventsStream); bus.SettingsRevision(c) != 1 || !c.DenyPurge || c.MaxBytes != 4<<30 {
		t.Fatalf("recreated stream %+v", c)
	}
	// Its ledger folded past what the node saw (20 > 6): on at 21.
	applied.Store(20)
	if err := k.js.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	recreated(21)
	// The node recreated it with the settings in force: not behind them.
	if in := k.c.InForce(); len(in.Drift) != 0 {
		t.Fatalf("drift after the recreation: %+v", in.Drift)
	}
	// An administrator's update of the recreated stream keeps its
	// sequence.
	k.c.Fold(k.l.event(event.ClusterSettings, func() event.ClusterSettingsData {
		d := settings.Default().Data()
		d.Revision, d.Streams.Repair, d.Streams.Events.MaxAge = 2, event.StreamsRepairRestore, "48h"
		return d
	}()))
	k.c.Settled(true)
	k.checked(t, 2)
	k.apply(t)
	s, err := k.js.Stream(ctx, bus.EventsStream)
	if err != nil || s.CachedInfo().Config.MaxAge != 48*time.Hour || s.CachedInfo().State.FirstSeq != 21 || s.CachedInfo().State.LastSeq != 21 {
		t.Fatalf("after revision 2: %+v %v", s, err)
	}
}

// TestLeaderBucketDriftAndDeletion: the leader bucket's TTL changed by
// hand is drift at once, under either rule left for an administrator to
// put back; under the restore rule a deleted bucket is made again.
func TestLeaderBucketDriftAndDeletion(t *testing.T) {
	k := newKit(t)
	k.c.Settled(true)
	k.checked(t, 0)
	k.update(t, bus.LeaderBucketStream, func(c *jetstream.StreamConfig) { c.MaxAge = 9 * time.Second })
	k.failing(t, settings.CheckStreamDrift, "stream KV_agentic_leader max_age is 9s, the cluster settings say 1.5s")
	if got := bucket(t, k).MaxAge; got != 9*time.Second {
		t.Fatalf("alarm rule corrected the bucket: %s", got)
	}

	// The restore rule, applied by an administrator: the TTL is back.
	k.restore(t, 1)
	if b := bucket(t, k); b.MaxAge != event.DefaultLeaseTTL || bus.SettingsRevision(b) != 1 {
		t.Fatalf("bucket after apply: TTL %s at revision %d", b.MaxAge, bus.SettingsRevision(b))
	}
	k.passing(t, settings.CheckStreamDrift)
	// Changed again: the node leaves it, and says who puts it back.
	k.update(t, bus.LeaderBucketStream, func(c *jetstream.StreamConfig) { c.MaxAge = 7 * time.Second })
	k.failing(t, settings.CheckStreamDrift, "stream KV_agentic_leader max_age is 7s, the cluster settings say 1.5s")
	k.c.Check(context.Background())
	if got := bucket(t, k).MaxAge; got != 7*time.Second {
		t.Fatalf("the node changed the bucket: %s", got)
	}
	if got := k.log.Find("leader bucket drifts from the cluster settings; an administrator puts it back"); len(got) != 1 || got[0].Attrs["drift"] != "max_age=7s" {
		t.Fatalf("logged %+v, want once, for the TTL changed by hand", got)
	}
	k.apply(t)
	if got := bucket(t, k).MaxAge; got != event.DefaultLeaseTTL {
		t.Fatalf("bucket TTL after apply: %s", got)
	}

	if err := k.js.DeleteKeyValue(context.Background(), bus.LeaderBucket); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the bucket made again", func() bool {
		_, err := k.js.KeyValue(context.Background(), bus.LeaderBucket)
		return err == nil
	})
	k.passing(t, health.CheckStreams)
	if b := bucket(t, k); b.MaxAge != event.DefaultLeaseTTL || bus.SettingsRevision(b) != 1 {
		t.Fatalf("recreated bucket %+v", b)
	}
	if got := k.log.Find("leader bucket restored: it was deleted, and is recreated with the cluster settings (streams repair rule: restore)"); len(got) != 1 || got[0].Attrs["reason"] != "restored" {
		t.Fatalf("recreation logged as %+v", got)
	}
}

// TestHandEditThatDropsTheRevisionIsNotUndone: a tool that updates a
// stream without its metadata drops the settings revision; the node does
// not undo the edit (nor write the revision back): the edit stays, raised
// as drift, the stream reported behind with no revision, until an
// administrator applies the settings again (--reapply), in full.
func TestHandEditThatDropsTheRevisionIsNotUndone(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 1)
	k.apply(t)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) {
		c.MaxMsgs = 100
		c.Metadata = nil
	})
	k.failing(t, settings.CheckStreamDrift, "stream AGENTIC_EVENTS max_msgs is 100")
	k.c.Check(context.Background())
	want := []settings.Drift{{Stream: bus.EventsStream, Field: "max_msgs", Expected: "unlimited", Actual: "100"}, behind(bus.EventsStream, 1, "none")}
	if in := k.c.InForce(); !slices.Equal(in.Drift, want) {
		t.Fatalf("drift %+v, want %+v", in.Drift, want)
	}
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != 100 || c.Metadata[bus.SettingsRevisionKey] != "" {
		t.Fatalf("stream after the check: max msgs %d, metadata %v, want the edit left as it is", c.MaxMsgs, c.Metadata)
	}
	applied := k.apply(t)
	if applied[0].From != 0 || !applied[0].Updated {
		t.Fatalf("applied %+v", applied)
	}
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != -1 || bus.SettingsRevision(c) != 1 {
		t.Fatalf("stream after apply: max msgs %d at revision %d", c.MaxMsgs, bus.SettingsRevision(c))
	}
	k.passing(t, settings.CheckStreamDrift)
}

// alarmLog is a health.Emitter keeping the alarm events.
type alarmLog struct {
	mu  sync.Mutex
	got []string // "raised CODE: reason", "cleared CODE: reason"
}

func (a *alarmLog) Emit(_ context.Context, drafts ...event.Draft) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range drafts {
		var data event.AlarmData
		if err := json.Unmarshal(d.Data, &data); err != nil {
			return err
		}
		a.got = append(a.got, strings.TrimPrefix(string(d.Type), "alarm.")+" "+string(data.Alarm)+": "+data.Reason)
	}
	return nil
}

func (a *alarmLog) events() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// monitor runs a health monitor over the kit's checks, emitting to a.
func (k *kit) monitor(t *testing.T, a *alarmLog) {
	t.Helper()
	m, err := health.NewMonitor(health.Config{Node: "n1", Emitter: a, Interval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(k.c.Checks()...); err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	t.Cleanup(m.Stop)
}

// TestRestoredDriftClearsAsRestored: under the restore rule a deleted
// stream's alarm is cleared saying it was restored; a changed stream's
// drift alarm is raised saying an administrator puts it back, and clears
// as "cause gone" once one did; under the alarm rule, a drift an operator
// puts back by hand clears as "cause gone" too.
func TestRestoredDriftClearsAsRestored(t *testing.T) {
	k := newKit(t)
	alarms := &alarmLog{}
	k.monitor(t, alarms)
	// The streams are behind the restore rule's revision until applied:
	// raised, then cleared once applied.
	k.restore(t, 1)
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT of revision 1 cleared", func() bool {
		got := alarms.events()
		return len(got) >= 2 && strings.HasPrefix(got[len(got)-1], "cleared STREAM_DRIFT: cause gone")
	})
	if got := alarms.events(); len(got) != 2 || !strings.HasPrefix(got[0], "raised STREAM_DRIFT: stream AGENTIC_EVENTS revision is 0, the cluster settings say 1") {
		t.Fatalf("alarms %q, want STREAM_DRIFT raised for the revision, then cleared", got)
	}
	n := len(alarms.events())
	if err := k.js.DeleteStream(context.Background(), bus.LogsStream); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "STREAM_MISSING raised and cleared", func() bool { return len(alarms.events()) >= n+2 })
	got := alarms.events()[n:]
	if len(got) != 2 || got[0] != "raised STREAM_MISSING: stream AGENTIC_LOGS is missing (deleted?)" ||
		got[1] != "cleared STREAM_MISSING: restored: stream AGENTIC_LOGS is missing (deleted?)" {
		t.Fatalf("alarms %q, want STREAM_MISSING raised then cleared as restored", got)
	}
	if r := k.check(t, health.CheckStreams).Cleared(); r != "restored" {
		t.Errorf("streams check's clear reason %q, want restored", r)
	}

	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 100 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT raised", func() bool { return len(alarms.events()) >= n+3 })
	k.c.Check(context.Background())
	k.apply(t)
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT cleared", func() bool { return len(alarms.events()) >= n+4 })
	got = alarms.events()[n:]
	if len(got) != 4 ||
		!strings.HasPrefix(got[2], "raised STREAM_DRIFT: stream AGENTIC_EVENTS max_msgs is 100") || !strings.Contains(got[2], "an administrator applies the settings in force") ||
		!strings.HasPrefix(got[3], "cleared STREAM_DRIFT: cause gone: stream AGENTIC_EVENTS max_msgs is 100") {
		t.Fatalf("alarms %q, want STREAM_DRIFT raised (for an administrator) then cleared as cause gone", got)
	}

	// Back to the alarm rule: an operator's fix is the cause gone.
	d := settings.Default().Data()
	d.Revision = 2
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 2)
	k.apply(t)
	// The streams were behind revision 2 until applied: that alarm
	// cleared too.
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT of revision 2 cleared", func() bool {
		got := alarms.events()
		return len(got) > n+4 && strings.HasPrefix(got[len(got)-1], "cleared STREAM_DRIFT: cause gone")
	})
	n = len(alarms.events())
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 50 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT raised again", func() bool { return len(alarms.events()) >= n+1 })
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT cleared again", func() bool { return len(alarms.events()) >= n+2 })
	if got := alarms.events(); len(got) != n+2 || !strings.HasPrefix(got[n], "raised STREAM_DRIFT: stream AGENTIC_EVENTS max_msgs is 50, the cluster settings say unlimited (streams repair rule alarm") ||
		!strings.HasPrefix(got[n+1], "cleared STREAM_DRIFT: cause gone: stream AGENTIC_EVENTS max_msgs is 50") {
		t.Fatalf("alarms %q, want the hand change raised and its fix cleared as cause gone", got)
	}
}
