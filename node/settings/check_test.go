package settings_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

// kit is a real JetStream server with the streams made as a start makes
// them, and a started Cluster over it.
type kit struct {
	js  jetstream.JetStream
	c   *settings.Cluster
	log *logrec.Recorder
	l   ledger
}

// newKit starts the kit; opts change the Cluster's configuration (its
// periodic comparison is hourly: what a test sees sooner came from the
// JetStream advisories or an explicit Check).
func newKit(t *testing.T, opts ...func(*settings.Config)) *kit {
	t.Helper()
	conn := bustest.Connect(t, bustest.Server(t))
	k := &kit{js: conn.JS, log: &logrec.Recorder{}}
	cfg := settings.Config{Node: "n1", NC: conn.NC, JS: conn.JS, Logger: slog.New(k.log), CheckEvery: time.Hour}
	for _, o := range opts {
		o(&cfg)
	}
	k.c = settings.New(cfg)
	if err := k.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return k
}

func (k *kit) stream(t *testing.T, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := k.js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

func (k *kit) update(t *testing.T, name string, change func(c *jetstream.StreamConfig)) {
	t.Helper()
	c := k.stream(t, name)
	change(&c)
	if _, err := k.js.UpdateStream(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// checked waits until the cluster has compared the streams with rev.
func (k *kit) checked(t *testing.T, rev uint64) settings.InForce {
	t.Helper()
	poll.Eventually(t, 20*time.Second, fmt.Sprintf("streams compared with revision %d", rev), func() bool { return k.c.InForce().CheckedRevision == rev && !k.c.InForce().Checked.IsZero() })
	return k.c.InForce()
}

func TestNewSettingsAreAppliedOnceLive(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	d.Streams.Events.MaxAge = "48h"
	d.Streams.Logs.MaxBytes = 2 << 30
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	in := k.checked(t, 1)
	if len(in.Drift) != 0 {
		t.Fatalf("drift after applying: %+v", in.Drift)
	}
	ev, logs := k.stream(t, bus.EventsStream), k.stream(t, bus.LogsStream)
	if ev.MaxAge != 48*time.Hour || ev.MaxBytes != 4<<30 || bus.SettingsRevision(ev) != 1 || !ev.DenyPurge {
		t.Errorf("events stream %+v", ev)
	}
	if logs.MaxBytes != 2<<30 || logs.MaxAge != 7*24*time.Hour || bus.SettingsRevision(logs) != 1 {
		t.Errorf("logs stream %+v", logs)
	}
	if got := k.log.Find("cluster settings applied to the stream"); len(got) != 2 {
		t.Errorf("applied logged %d times, want once per stream", len(got))
	}
	// Applying is idempotent: checking again changes nothing.
	k.c.Check(context.Background())
	if got := k.log.Find("cluster settings applied to the stream"); len(got) != 2 {
		t.Errorf("a second check applied again: %d", len(got))
	}
}

// TestDriftIsReportedOnceAndNotCorrected: a stream changed behind the
// node's back is drift: reported with field, expected and actual value,
// logged once, never restored.
func TestDriftIsReportedOnceAndNotCorrected(t *testing.T) {
	k := newKit(t)
	k.c.Settled(true)
	if in := k.checked(t, 0); len(in.Drift) != 0 {
		t.Fatalf("drift on fresh streams: %+v", in.Drift)
	}
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 10 })
	for range 3 {
		k.c.Check(context.Background())
	}
	want := settings.Drift{Stream: bus.EventsStream, Field: "max_msgs", Expected: "unlimited", Actual: "10"}
	if in := k.c.InForce(); !slices.Equal(in.Drift, []settings.Drift{want}) {
		t.Fatalf("drift %+v, want %+v", in.Drift, want)
	}
	if got := k.c.Drift(); len(got) != 3 || len(got[bus.LogsStream]) != 0 || len(got[bus.LeaderBucketStream]) != 0 || !slices.Equal(got[bus.EventsStream], []settings.Drift{want}) {
		t.Fatalf("Drift() = %+v", got)
	}
	if got := k.stream(t, bus.EventsStream).MaxMsgs; got != 10 {
		t.Fatalf("drift corrected: max msgs %d", got)
	}
	logged := k.log.Find("stream drifts from the cluster settings")
	if len(logged) != 1 || logged[0].Level != slog.LevelError || logged[0].Attrs["field"] != "max_msgs" ||
		logged[0].Attrs["expected"] != "unlimited" || logged[0].Attrs["actual"] != "10" || logged[0].Attrs["stream"] != bus.EventsStream {
		t.Fatalf("drift logged as %+v, want once at error level with field, expected and actual", logged)
	}
	// Put back by hand: the drift is resolved, and said so.
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 })
	k.c.Check(context.Background())
	if in := k.c.InForce(); len(in.Drift) != 0 || len(k.log.Find("stream drift resolved")) != 1 {
		t.Fatalf("drift after repair: %+v", in.Drift)
	}
	// An absent stream is drift too, and is not made again.
	if err := k.js.DeleteStream(context.Background(), bus.LogsStream); err != nil {
		t.Fatal(err)
	}
	k.c.Check(context.Background())
	want = settings.Drift{Stream: bus.LogsStream, Field: "exists", Expected: "true", Actual: "false"}
	if in := k.c.InForce(); !slices.Equal(in.Drift, []settings.Drift{want}) {
		t.Fatalf("drift %+v, want %+v", in.Drift, want)
	}
	if _, err := k.js.Stream(context.Background(), bus.LogsStream); err == nil {
		t.Fatal("the deleted stream was made again")
	}
}

// TestStreamAheadOfLedgerIsLeftAlone: a stream at a revision this ledger
// has not folded yet is neither compared nor changed.
func TestStreamAheadOfLedgerIsLeftAlone(t *testing.T) {
	k := newKit(t)
	k.update(t, bus.EventsStream, func(c *jetstream.StreamConfig) {
		c.Metadata[bus.SettingsRevisionKey] = "9"
		c.MaxAge = 2 * time.Hour
	})
	k.c.Settled(true)
	if in := k.checked(t, 0); len(in.Drift) != 0 {
		t.Fatalf("drift: %+v", in.Drift)
	}
	if got := k.stream(t, bus.EventsStream); got.MaxAge != 2*time.Hour || bus.SettingsRevision(got) != 9 {
		t.Fatalf("stream changed: %+v", got)
	}
	if len(k.log.Find("stream carries a cluster settings revision this ledger has not folded yet; not compared")) != 1 {
		t.Fatal("not logged")
	}
}

// TestSettingsThatCannotBeAppliedAreDrift: three replicas on a single
// server cannot be applied; the node says so and reports the difference.
func TestSettingsThatCannotBeAppliedAreDrift(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	d.Streams.Events.Replicas = 3
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	in := k.checked(t, 1)
	want := settings.Drift{Stream: bus.EventsStream, Field: "replicas", Expected: "3", Actual: "1"}
	if !slices.Equal(in.Drift, []settings.Drift{want}) {
		t.Fatalf("drift %+v, want %+v", in.Drift, want)
	}
	failed := k.log.Find("cannot apply the cluster settings to the stream")
	if len(failed) != 1 || failed[0].Level != slog.LevelError || failed[0].Attrs["stream"] != bus.EventsStream {
		t.Fatalf("failure logged as %+v", failed)
	}
	// The logs stream took revision 1.
	if got := k.stream(t, bus.LogsStream); bus.SettingsRevision(got) != 1 {
		t.Fatalf("logs stream at revision %d", bus.SettingsRevision(got))
	}
}
