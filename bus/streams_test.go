package bus_test

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func connect(t *testing.T, srv *embedded.Server) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ensure(t *testing.T, js jetstream.JetStream, cfg bus.StreamConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
}

func streamConfig(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return s.CachedInfo().Config
}

func TestEnsureStreamsCreatesAbsentStreamsWithDefaults(t *testing.T) {
	c := connect(t, bustest.Server(t))
	ensure(t, c.JS, bus.StreamConfig{Replicas: 1})
	for _, tt := range []struct {
		name string
		want bus.StreamSettings
	}{
		{bus.EventsStream, bus.StreamSettings{MaxAge: 30 * 24 * time.Hour, MaxBytes: 4 << 30, Replicas: 1}},
		{bus.LogsStream, bus.StreamSettings{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, Replicas: 1}},
	} {
		got := streamConfig(t, c.JS, tt.name)
		if got.MaxAge != tt.want.MaxAge || got.MaxBytes != tt.want.MaxBytes || got.Replicas != tt.want.Replicas ||
			got.Discard != jetstream.DiscardOld || got.MaxMsgs != -1 || bus.SettingsRevision(got) != 0 || got.Metadata[bus.SettingsRevisionKey] != "0" {
			t.Errorf("%s: %+v, want settings %+v at revision 0, discard old", tt.name, got, tt.want)
		}
	}
	if ev := streamConfig(t, c.JS, bus.EventsStream); !ev.DenyDelete || !ev.DenyPurge || ev.Duplicates != 2*time.Minute {
		t.Errorf("events stream lost its protections: %+v", ev)
	}
}

// TestEnsureStreamsNeverChangesAStream: a start with other settings leaves
// an existing stream exactly as it is, changed by hand or not.
func TestEnsureStreamsNeverChangesAStream(t *testing.T) {
	c := connect(t, bustest.Server(t))
	ensure(t, c.JS, bus.StreamConfig{Replicas: 1})
	ctx := context.Background()
	altered := streamConfig(t, c.JS, bus.EventsStream)
	altered.MaxMsgs = 10
	altered.MaxAge = 48 * time.Hour
	if _, err := c.JS.UpdateStream(ctx, altered); err != nil {
		t.Fatal(err)
	}
	before := streamConfig(t, c.JS, bus.EventsStream)
	beforeLogs := streamConfig(t, c.JS, bus.LogsStream)
	bucket := streamConfig(t, c.JS, bus.LeaderBucketStream)
	if bucket.MaxAge != event.DefaultLeaseTTL || bucket.Duplicates != event.DefaultLeaseTTL || bus.SettingsRevision(bucket) != 0 || bucket.Metadata[bus.SettingsRevisionKey] != "0" {
		t.Errorf("leader bucket made with %+v, want the default lease TTL at revision 0", bucket)
	}
	other := bus.StreamSettings{MaxAge: 2 * time.Hour, MaxBytes: 128 << 20, Replicas: 1}
	ensure(t, c.JS, bus.StreamConfig{Events: other, Logs: other, Revision: 7, Replicas: 1, LeaseTTL: 3 * time.Second})
	after := streamConfig(t, c.JS, bus.EventsStream)
	if after.MaxMsgs != 10 || after.MaxAge != 48*time.Hour || after.MaxBytes != before.MaxBytes || bus.SettingsRevision(after) != 0 {
		t.Errorf("events stream changed by a start: %+v, was %+v", after, before)
	}
	if l := streamConfig(t, c.JS, bus.LogsStream); l.MaxAge != beforeLogs.MaxAge || l.MaxBytes != beforeLogs.MaxBytes {
		t.Errorf("logs stream changed by a start: %+v, was %+v", l, beforeLogs)
	}
	if b := streamConfig(t, c.JS, bus.LeaderBucketStream); !reflect.DeepEqual(b, bucket) {
		t.Errorf("leader bucket changed by a start: %+v, was %+v", b, bucket)
	}
}

// TestEnsureStreamsOnASmallStore: JetStream reserves MaxBytes against the
// server's store limit; a store too small for the default limits still
// gets both streams, with smaller byte limits that leave room for each
// other (and says so) — sized before they are created, never updated:
// from the store limit when it is known, by halving until the
// reservation fits when it is not.
func TestEnsureStreamsOnASmallStore(t *testing.T) {
	for _, tc := range []struct {
		name         string
		limit        int64 // StreamConfig.StoreLimit
		events, logs int64
	}{
		// 4 GiB halves down to 256 MiB, which fits in 300 MiB. 1 GiB
		// halves down to 32 MiB, which fits in the 44 MiB left.
		{"limit unknown", 0, 256 << 20, 32 << 20},
		// A quarter of the store each.
		{"limit known", 300 << 20, 75 << 20, 75 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := smallStore(t, 300<<20)
			rec := &logrec.Recorder{}
			ensure(t, js, bus.StreamConfig{Replicas: 1, Logger: slog.New(rec), StoreLimit: tc.limit})
			if got := streamConfig(t, js, bus.EventsStream).MaxBytes; got != tc.events {
				t.Errorf("events max bytes %d, want %d", got, tc.events)
			}
			if got := streamConfig(t, js, bus.LogsStream); got.MaxBytes != tc.logs || got.MaxAge != 7*24*time.Hour {
				t.Errorf("logs stream max bytes %d, age %s, want %d and the 7 day age limit", got.MaxBytes, got.MaxAge, tc.logs)
			}
			if msgs := rec.Messages(slog.LevelError); len(msgs) != 2 || !strings.Contains(msgs[0], "smaller byte limit") {
				t.Errorf("logged %q, want two errors about smaller byte limits", msgs)
			}
		})
	}
}

// smallStore starts a JetStream server whose store is limited to max
// bytes and connects to it.
func smallStore(t *testing.T, max int64) jetstream.JetStream {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), JetStreamMaxStore: max})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// An absent events stream is created continuing where EventsFirstSeq says
// (a ledger node's head); an existing one is left alone and the function is
// not asked.
func TestEnsureStreamsContinuesAnAbsentEventsStream(t *testing.T) {
	c := connect(t, bustest.Server(t))
	asked := 0
	first := func() (uint64, error) { asked++; return 42, nil }
	ensure(t, c.JS, bus.StreamConfig{Replicas: 1, EventsFirstSeq: first})
	s, err := c.JS.Stream(context.Background(), bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.CachedInfo().State; st.FirstSeq != 42 || st.LastSeq != 41 || asked != 1 {
		t.Fatalf("events stream state %+v after asking %d times, want first 42", st, asked)
	}
	if logs := streamConfig(t, c.JS, bus.LogsStream); logs.FirstSeq > 1 {
		t.Errorf("logs stream first seq %d", logs.FirstSeq)
	}
	ensure(t, c.JS, bus.StreamConfig{Replicas: 1, EventsFirstSeq: first})
	if asked != 1 {
		t.Errorf("asked %d times with the stream there", asked)
	}
}
