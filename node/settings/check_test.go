package settings_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

// kit is a real JetStream server in operator mode with the streams made
// as a start makes them, and a started Cluster over it connected as a
// ledger node (with a node's permissions: it may create the streams,
// never update them). js is the test harness's connection (hand edits,
// inspection), admin an administrator's (Apply).
type kit struct {
	js    jetstream.JetStream
	admin jetstream.JetStream
	srv   *embedded.Server
	root  *trust.Root
	c     *settings.Cluster
	log   *logrec.Recorder
	l     ledger
}

// newKit starts the kit; opts change the Cluster's configuration (its
// periodic comparison is hourly: what a test sees sooner came from the
// JetStream advisories or an explicit Check).
func newKit(t *testing.T, opts ...func(*settings.Config)) *kit {
	t.Helper()
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	srv := bustest.SecureServer(t, root)
	harness := bustest.ConnectHarness(t, srv, root)
	id, err := trust.NewIdentity(root, "n1", trust.KindNode, []string{event.RoleMemory}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conn := bustest.ConnectAs(t, srv, root, id)
	admin := bustest.ConnectAs(t, srv, root, bustest.Admin(t, root))
	k := &kit{js: harness.JS, admin: admin.JS, srv: srv, root: root, log: &logrec.Recorder{}}
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

// apply applies the settings in force as an administrator does
// (settings.Apply over an admin connection), and waits until the cluster,
// woken by the JetStream advisories of the updates, finds no drift.
func (k *kit) apply(t *testing.T) []settings.Applied {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	applied, err := settings.Apply(ctx, k.admin, k.c.Settings())
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	poll.Eventually(t, 20*time.Second, "no drift after applying", func() bool { return len(k.c.InForce().Drift) == 0 })
	return applied
}

// behind is the FieldRevision drift of stream at revision actual, the
// revision in force being rev.
func behind(stream string, rev uint64, actual string) settings.Drift {
	return settings.Drift{Stream: stream, Field: settings.FieldRevision, Expected: strconv.FormatUint(rev, 10), Actual: actual}
}

// checked waits until the cluster has compared the streams with rev.
func (k *kit) checked(t *testing.T, rev uint64) settings.InForce {
	t.Helper()
	poll.Eventually(t, 20*time.Second, fmt.Sprintf("streams compared with revision %d", rev), func() bool { return k.c.InForce().CheckedRevision == rev && !k.c.InForce().Checked.IsZero() })
	return k.c.InForce()
}

// TestNewSettingsAreBehindUntilApplied: settings recorded in the ledger
// are not applied by the node (only an administrator may update a
// stream): once live it reports every stream and the leader bucket behind
// them, with the fields that differ; an administrator's Apply brings them
// to the settings, and the drift clears.
func TestNewSettingsAreBehindUntilApplied(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	d.Streams.Events.MaxAge = "48h"
	d.Streams.Logs.MaxBytes = 2 << 30
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	in := k.checked(t, 1)
	want := []settings.Drift{
		{Stream: bus.EventsStream, Field: "max_age", Expected: "48h", Actual: "720h"}, behind(bus.EventsStream, 1, "0"),
		{Stream: bus.LogsStream, Field: "max_bytes", Expected: "2GiB", Actual: "1GiB"}, behind(bus.LogsStream, 1, "0"),
		behind(bus.LeaderBucketStream, 1, "0"),
	}
	if !slices.Equal(in.Drift, want) {
		t.Fatalf("drift before applying:\n got %+v\nwant %+v", in.Drift, want)
	}
	reason := k.failing(t, settings.CheckStreamDrift, "stream AGENTIC_EVENTS revision is 0, the cluster settings say 1")
	if !strings.Contains(reason, "agentctl cluster settings set --reapply") {
		t.Errorf("drift reason %q does not say how to apply", reason)
	}
	if ev := k.stream(t, bus.EventsStream); ev.MaxAge != 30*24*time.Hour || bus.SettingsRevision(ev) != 0 {
		t.Fatalf("the node updated the events stream: %+v", ev)
	}
	if got := k.log.Find("stream is behind the cluster settings in force: an administrator applies them"); len(got) != 2 || got[0].Level != slog.LevelError {
		t.Errorf("behind logged %+v, want once per stream at error level", got)
	}
	if got := k.log.Find("leader bucket is behind the cluster settings in force: an administrator applies them"); len(got) != 1 {
		t.Errorf("bucket behind logged %d times, want once", len(got))
	}
	// Comparing again changes nothing and logs nothing new.
	k.c.Check(context.Background())
	if in := k.c.InForce(); !slices.Equal(in.Drift, want) || len(k.log.Find("stream is behind the cluster settings in force: an administrator applies them")) != 2 {
		t.Fatalf("a second check: drift %+v", in.Drift)
	}

	applied := k.apply(t)
	if len(applied) != 3 || !applied[0].Updated || !applied[1].Updated || !applied[2].Updated || applied[0].From != 0 {
		t.Fatalf("applied %+v, want the two streams and the bucket updated from revision 0", applied)
	}
	ev, logs := k.stream(t, bus.EventsStream), k.stream(t, bus.LogsStream)
	if ev.MaxAge != 48*time.Hour || ev.MaxBytes != 4<<30 || bus.SettingsRevision(ev) != 1 || !ev.DenyPurge {
		t.Errorf("events stream %+v", ev)
	}
	if logs.MaxBytes != 2<<30 || logs.MaxAge != 7*24*time.Hour || bus.SettingsRevision(logs) != 1 {
		t.Errorf("logs stream %+v", logs)
	}
	k.passing(t, settings.CheckStreamDrift)
	if len(k.log.Find("stream drift resolved")) != 5 {
		t.Errorf("resolved logged %d times, want once per drift", len(k.log.Find("stream drift resolved")))
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
// server cannot be applied; Apply says so for that stream, applies the
// others, and the node reports the difference.
func TestSettingsThatCannotBeAppliedAreDrift(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision = 1
	d.Streams.Events.Replicas = 3
	k.c.Fold(k.l.event(event.ClusterSettings, d))
	k.c.Settled(true)
	k.checked(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	applied, err := settings.Apply(ctx, k.admin, k.c.Settings())
	if err == nil || !strings.Contains(err.Error(), "settings: update stream AGENTIC_EVENTS to revision 1") {
		t.Fatalf("apply error %v, want the events stream's update refused", err)
	}
	if len(applied) != 3 || applied[0].Updated || applied[0].Error == "" || !applied[1].Updated || applied[1].Error != "" || !applied[2].Updated {
		t.Fatalf("applied %+v, want the events stream failed, the others updated", applied)
	}
	want := []settings.Drift{{Stream: bus.EventsStream, Field: "replicas", Expected: "3", Actual: "1"}, behind(bus.EventsStream, 1, "0")}
	poll.Eventually(t, 20*time.Second, "the drift of the events stream alone", func() bool { return slices.Equal(k.c.InForce().Drift, want) })
	if got := k.stream(t, bus.LogsStream); bus.SettingsRevision(got) != 1 {
		t.Fatalf("logs stream at revision %d", bus.SettingsRevision(got))
	}
}
