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
	"github.com/agentic-dev/agentic/node/health"
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

// restore folds settings at rev with the restore rule and waits until the
// streams are compared with them.
func (k *kit) restore(t *testing.T, rev uint64) {
	t.Helper()
	d := settings.Default().Data()
	d.Revision, d.Streams.Repair = rev, event.StreamsRepairRestore
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, rev)
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

// TestRestoreRuleRestoresDrift: under the restore rule the node that
// notices puts the stream back, says so, and the alarm it raised clears.
func TestRestoreRuleRestoresDrift(t *testing.T) {
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
	poll.Eventually(t, 10*time.Second, "the stream restored", func() bool {
		c := k.stream(t, bus.EventsStream)
		return c.MaxMsgs == -1 && c.MaxMsgsPerSubject == -1 && c.Discard == jetstream.DiscardOld
	})
	// The alarm was raised (reported once), then cleared.
	k.failing(t, settings.CheckStreamDrift, "max_msgs is 100")
	k.passing(t, settings.CheckStreamDrift)
	poll.Eventually(t, 10*time.Second, "the restore logged", func() bool {
		got := k.log.Find("stream restored to the cluster settings (streams repair rule: restore)")
		return len(got) == 1 && got[0].Attrs["reason"] == "restored" && strings.Contains(got[0].Attrs["fields"], "max_msgs unlimited (was 100)")
	})
	if c := k.stream(t, bus.EventsStream); bus.SettingsRevision(c) != 1 || !c.DenyDelete {
		t.Fatalf("restored stream %+v", c)
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
	// Another update of the recreated stream keeps its first sequence.
	k.c.Fold(k.l.event(event.ClusterSettings, func() event.ClusterSettingsData {
		d := settings.Default().Data()
		d.Revision, d.Streams.Repair, d.Streams.Events.MaxAge = 2, event.StreamsRepairRestore, "48h"
		return d
	}()))
	k.c.Settled(true)
	k.checked(t, 2)
	s, err := k.js.Stream(ctx, bus.EventsStream)
	if err != nil || s.CachedInfo().Config.MaxAge != 48*time.Hour || s.CachedInfo().State.LastSeq != 21 {
		t.Fatalf("after revision 2: %+v %v", s, err)
	}
}

// TestLeaderBucketDriftAndDeletion: the leader bucket's TTL changed by
// hand is drift at once; under the restore rule it is put back, and a
// deleted bucket is made again.
func TestLeaderBucketDriftAndDeletion(t *testing.T) {
	k := newKit(t)
	k.c.Settled(true)
	k.checked(t, 0)
	k.update(t, bus.LeaderBucketStream, func(c *jetstream.StreamConfig) { c.MaxAge = 9 * time.Second })
	k.failing(t, settings.CheckStreamDrift, "stream KV_agentic_leader max_age is 9s, the cluster settings say 1.5s")
	if got := bucket(t, k).MaxAge; got != 9*time.Second {
		t.Fatalf("alarm rule corrected the bucket: %s", got)
	}

	k.restore(t, 1)
	poll.Eventually(t, 10*time.Second, "the bucket TTL restored", func() bool { return bucket(t, k).MaxAge == event.DefaultLeaseTTL })
	k.passing(t, settings.CheckStreamDrift)
	k.update(t, bus.LeaderBucketStream, func(c *jetstream.StreamConfig) { c.MaxAge = 7 * time.Second })
	poll.Eventually(t, 10*time.Second, "the bucket TTL restored again", func() bool { return bucket(t, k).MaxAge == event.DefaultLeaseTTL })
	poll.Eventually(t, 10*time.Second, "the bucket restore logged", func() bool {
		got := k.log.Find("stream restored to the cluster settings (streams repair rule: restore)")
		return len(got) == 1 && got[0].Attrs["stream"] == bus.LeaderBucketStream && got[0].Attrs["fields"] == "max_age 1.5s (was 7s)"
	})

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
}

// TestHandEditThatDropsTheRevisionIsNotUndone: a tool that updates a
// stream without its metadata drops the settings revision; the node must
// not take the stream for an older revision and undo the edit (the limit
// put back "without a word"): under the alarm rule the edit stays, raised
// as drift, and the revision is written back.
func TestHandEditThatDropsTheRevisionIsNotUndone(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 1)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) {
		c.MaxMsgs = 100
		c.Metadata = nil
	})
	k.failing(t, settings.CheckStreamDrift, "stream AGENTIC_EVENTS max_msgs is 100")
	k.c.Check(context.Background())
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != 100 || bus.SettingsRevision(c) != 1 {
		t.Fatalf("stream after the check: max msgs %d at revision %d, want 100 at 1", c.MaxMsgs, bus.SettingsRevision(c))
	}
	if got := k.log.Find("stream lost its cluster settings revision and was changed by hand: applying the settings' limits only, the hand changes stay (streams repair rule alarm)"); len(got) != 1 || got[0].Level != slog.LevelError {
		t.Fatalf("logged %+v", got)
	}
	// A later revision applies in full: --reapply still repairs.
	d.Revision = 2
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 2)
	if c := k.stream(t, bus.EventsStream); c.MaxMsgs != -1 || bus.SettingsRevision(c) != 2 {
		t.Fatalf("stream after revision 2: max msgs %d at revision %d", c.MaxMsgs, bus.SettingsRevision(c))
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

// TestRestoredDriftClearsAsRestored: under the restore rule the drift
// alarm is raised saying the node restores the stream, and cleared saying
// it was restored; under the alarm rule, a drift an operator puts back
// clears as "cause gone".
func TestRestoredDriftClearsAsRestored(t *testing.T) {
	k := newKit(t)
	alarms := &alarmLog{}
	k.monitor(t, alarms)
	k.restore(t, 1)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 100 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT raised and cleared", func() bool { return len(alarms.events()) >= 2 })
	got := alarms.events()
	if len(got) != 2 ||
		!strings.HasPrefix(got[0], "raised STREAM_DRIFT: stream AGENTIC_EVENTS max_msgs is 100") || !strings.Contains(got[0], "the node restores it") ||
		!strings.HasPrefix(got[1], "cleared STREAM_DRIFT: restored: stream AGENTIC_EVENTS max_msgs is 100") {
		t.Fatalf("alarms %q, want STREAM_DRIFT raised (restoring) then cleared as restored", got)
	}
	if r := k.check(t, settings.CheckStreamDrift).Cleared(); r != "restored" {
		t.Errorf("drift check's clear reason %q, want restored", r)
	}

	// Back to the alarm rule: an operator's fix is the cause gone.
	d := settings.Default().Data()
	d.Revision = 2
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 2)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 50 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT raised again", func() bool { return len(alarms.events()) >= 3 })
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 })
	poll.Eventually(t, 10*time.Second, "STREAM_DRIFT cleared again", func() bool { return len(alarms.events()) >= 4 })
	if got := alarms.events(); len(got) != 4 || !strings.HasPrefix(got[3], "cleared STREAM_DRIFT: cause gone: stream AGENTIC_EVENTS max_msgs is 50") {
		t.Fatalf("alarms %q, want the hand fix cleared as cause gone", got)
	}
}
