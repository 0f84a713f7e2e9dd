package settings_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// applyAs runs settings.Apply with s over js, within a few seconds (a
// refused request is not answered: it times out).
func applyAs(t *testing.T, js jetstream.JetStream, s settings.Settings) ([]settings.Applied, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return settings.Apply(ctx, js, s)
}

func settingsOf(t *testing.T, d event.ClusterSettingsData) settings.Settings {
	t.Helper()
	s, err := settings.FromData(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestApplyKeepsSequenceAndForeignMetadata: Apply updates every stream
// behind the settings, keeping its sequence and the metadata others put
// on it; applying again changes nothing; a stream at a newer revision is
// left alone.
func TestApplyKeepsSequenceAndForeignMetadata(t *testing.T) {
	k := newKit(t)
	ctx := context.Background()
	for range 3 {
		if _, err := k.js.Publish(ctx, event.SubjectPrefix+"test", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.js.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	// Made again by hand with its sequence continuing, as the alarm rule's
	// remedy says, and marked by another tool.
	made := bus.EventsStreamConfig(bus.DefaultEventsSettings, 0)
	made.FirstSeq = 4
	made.Metadata["owner"] = "ops"
	if _, err := k.js.CreateStream(ctx, made); err != nil {
		t.Fatal(err)
	}
	d := settings.Default().Data()
	d.Revision, d.Streams.Events.MaxAge, d.Lease.TTL = 1, "48h", event.Duration(3*time.Second)
	s := settingsOf(t, d)

	applied, err := applyAs(t, k.admin, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []settings.Applied{{Stream: bus.EventsStream, Updated: true}, {Stream: bus.LogsStream, Updated: true}, {Stream: bus.LeaderBucketStream, Updated: true}}
	if !reflect.DeepEqual(applied, want) {
		t.Fatalf("applied %+v, want %+v", applied, want)
	}
	st, err := k.js.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if c, state := st.CachedInfo().Config, st.CachedInfo().State; c.MaxAge != 48*time.Hour || bus.SettingsRevision(c) != 1 || c.Metadata["owner"] != "ops" ||
		c.FirstSeq != 4 || state.FirstSeq != 4 {
		t.Fatalf("events stream %+v, state %+v: want max age 48h at revision 1, owner kept, first sequence 4", c, state)
	}
	if ack, err := k.js.Publish(ctx, event.SubjectPrefix+"test", []byte("y")); err != nil || ack.Sequence != 4 {
		t.Fatalf("publish after apply: %+v %v, want sequence 4", ack, err)
	}
	if b := k.stream(t, bus.LeaderBucketStream); b.MaxAge != 3*time.Second || bus.SettingsRevision(b) != 1 {
		t.Fatalf("bucket TTL %s at revision %d", b.MaxAge, bus.SettingsRevision(b))
	}

	// Idempotent: nothing to do the second time.
	before := map[string]jetstream.StreamConfig{}
	for _, name := range []string{bus.EventsStream, bus.LogsStream, bus.LeaderBucketStream} {
		before[name] = k.stream(t, name)
	}
	if applied, err = applyAs(t, k.admin, s); err != nil {
		t.Fatal(err)
	}
	for _, a := range applied {
		if a.Updated || a.From != 1 || a.Error != "" {
			t.Errorf("second apply: %+v", a)
		}
		if got := k.stream(t, a.Stream); !reflect.DeepEqual(got, before[a.Stream]) {
			t.Errorf("%s changed by the second apply:\n got %+v\nwant %+v", a.Stream, got, before[a.Stream])
		}
	}

	// An older revision does not undo a newer one.
	old := settingsOf(t, settings.Default().Data())
	if applied, err = applyAs(t, k.admin, old); err != nil {
		t.Fatal(err)
	}
	for _, a := range applied {
		if a.Updated {
			t.Errorf("revision 0 applied over revision 1: %+v", a)
		}
	}
	if c := k.stream(t, bus.EventsStream); c.MaxAge != 48*time.Hour || bus.SettingsRevision(c) != 1 {
		t.Fatalf("events stream after applying revision 0: max age %s at revision %d", c.MaxAge, bus.SettingsRevision(c))
	}
}

// TestApplyWithoutAdminIsRefused: an operator who is not an administrator
// may not update a stream; NATS refuses it, Apply returns the refusal
// (a permissions violation) and stops there, and nothing changes. A
// ledger node's connection is refused likewise.
func TestApplyWithoutAdminIsRefused(t *testing.T) {
	k := newKit(t)
	d := settings.Default().Data()
	d.Revision, d.Streams.Events.MaxAge = 1, "48h"
	s := settingsOf(t, d)
	op, err := trust.NewIdentity(k.root, "alice", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	node, err := trust.NewIdentity(k.root, "n2", trust.KindNode, []string{event.RoleMemory, event.RoleOrchestrator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []*trust.Identity{op, node} {
		conn := bustest.ConnectAs(t, k.srv, k.root, id)
		applied, err := applyAs(t, conn.JS, s)
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `Permissions Violation for Publish to "$JS.API.STREAM.UPDATE.AGENTIC_EVENTS"`) ||
			!strings.Contains(err.Error(), "settings: update stream AGENTIC_EVENTS to revision 1") || !strings.Contains(err.Error(), "admin credentials") {
			t.Fatalf("%s: apply error %v, want the permissions violation with the hint", id.ID, err)
		}
		if len(applied) != 1 || applied[0].Stream != bus.EventsStream || applied[0].Updated || applied[0].Error == "" {
			t.Fatalf("%s: applied %+v, want the events stream refused, and no more tried", id.ID, applied)
		}
	}
	if c := k.stream(t, bus.EventsStream); c.MaxAge != 30*24*time.Hour || bus.SettingsRevision(c) != 0 {
		t.Fatalf("events stream changed: max age %s at revision %d", c.MaxAge, bus.SettingsRevision(c))
	}
	// The administrator may.
	if _, err := applyAs(t, k.admin, s); err != nil {
		t.Fatalf("admin: %v", err)
	}
	if c := k.stream(t, bus.EventsStream); c.MaxAge != 48*time.Hour {
		t.Fatalf("admin's apply: max age %s", c.MaxAge)
	}
}
