package bus_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/nats-io/nats.go/jetstream"
)

func replicas(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return info.Config.Replicas
}

// TestClusterStreamsGetThreeReplicas: on a NATS cluster the defaults give
// the streams and the leader bucket three replicas, also when a start
// begins while one server the cluster knows is down (and comes back within
// the placement wait), and a later start that asks for one lowers nothing.
func TestClusterStreamsGetThreeReplicas(t *testing.T) {
	c := bustest.Cluster(t, 3)
	c.Stop(2)
	c.WaitHealthy() // the two left may elect a new meta leader
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URLs: c.URLs(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !conn.Clustered() || bus.DefaultReplicas(conn.NC) != 3 {
		t.Fatalf("clustered %v, default replicas %d; want a cluster and 3", conn.Clustered(), bus.DefaultReplicas(conn.NC))
	}
	// Whether nats-server places three replicas with a peer down depends
	// on whether its meta leader has marked that peer offline yet; if it
	// has, EnsureStreams waits for the placement (PlacementWait), and the
	// server comes back meanwhile, as a restarted machine does. Either way
	// the streams get three.
	ensured := make(chan error, 1)
	go func() { ensured <- bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{PlacementWait: time.Minute}) }()
	c.Start(2)
	if err := <-ensured; err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket} {
		if got := replicas(t, conn.JS, s); got != 3 {
			t.Errorf("%s: %d replicas, want 3", s, got)
		}
	}
	ensure(t, conn.JS, bus.StreamConfig{Replicas: 1})
	for _, s := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket} {
		if got := replicas(t, conn.JS, s); got != 3 {
			t.Errorf("%s after a start asking one replica: %d, want 3 still", s, got)
		}
	}
}

// TestLoneServerDefaultsToOneReplica: a server that is not clustered gets
// one replica, the only count it can hold.
func TestLoneServerDefaultsToOneReplica(t *testing.T) {
	conn := connect(t, bustest.Server(t))
	if conn.Clustered() || bus.DefaultReplicas(conn.NC) != 1 {
		t.Fatalf("clustered %v, default replicas %d; want a lone server and 1", conn.Clustered(), bus.DefaultReplicas(conn.NC))
	}
	ensure(t, conn.JS, bus.StreamConfig{})
	for _, s := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket, artifact.BucketStream} {
		if got := replicas(t, conn.JS, s); got != 1 {
			t.Errorf("%s: %d replicas, want 1", s, got)
		}
	}
}

// TestReplicasThatCannotBePlaced: a cluster of two servers cannot hold
// three replicas; after the placement wait the streams and the bucket are
// made with two, and an error says so for each.
func TestReplicasThatCannotBePlaced(t *testing.T) {
	c := bustest.Cluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URLs: c.URLs(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rec := &logrec.Recorder{}
	start := time.Now()
	ensure(t, conn.JS, bus.StreamConfig{PlacementWait: 300 * time.Millisecond, Logger: slog.New(rec)})
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("streams made after %s, before the placement wait", waited)
	}
	for _, s := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket, artifact.BucketStream} {
		if got := replicas(t, conn.JS, s); got != 2 {
			t.Errorf("%s: %d replicas, want 2 (all two servers can hold)", s, got)
		}
	}
	msgs := rec.Messages(slog.LevelError)
	if n := len(slices.DeleteFunc(msgs, func(m string) bool { return !strings.Contains(m, "fewer replicas") })); n != 4 {
		t.Errorf("logged %q, want an error about fewer replicas for each stream and bucket", rec.Messages(slog.LevelError))
	}
}

// TestEmbeddedClusterConfigErrors: a clustered embedded server without
// what JetStream needs in a cluster, or with routes it cannot use, is
// refused with the setting named, before anything starts.
func TestEmbeddedClusterConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tt := range map[string]struct {
		cfg  embedded.Config
		want string
	}{
		"routes without a cluster listen address": {embedded.Config{ServerName: "a", Routes: []string{"nats://127.0.0.1:6222"}}, "--nats-cluster-listen"},
		"no server name":        {embedded.Config{ClusterListen: "127.0.0.1:0", ClusterName: "c"}, "server name"},
		"no cluster name":       {embedded.Config{ServerName: "a", ClusterListen: "127.0.0.1:0"}, "--nats-cluster-name"},
		"a bad route":           {embedded.Config{ServerName: "a", ClusterName: "c", ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1:6222"}}, `route "127.0.0.1:6222"`},
		"a bad cluster address": {embedded.Config{ServerName: "a", ClusterName: "c", ClusterListen: "6222"}, `"6222"`},
	} {
		tt.cfg.StoreDir, tt.cfg.Listen = dir, "127.0.0.1:0"
		srv, err := embedded.Start(context.Background(), tt.cfg)
		if err == nil {
			srv.Shutdown()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want one naming %s", name, err, tt.want)
		}
	}
}

// TestReplicasOnALoneServer: three replicas asked of a server that is not
// clustered are one, at once (it never will be clustered), with an error
// saying so.
func TestReplicasOnALoneServer(t *testing.T) {
	conn := connect(t, bustest.Server(t))
	rec := &logrec.Recorder{}
	start := time.Now()
	ensure(t, conn.JS, bus.StreamConfig{Replicas: 3, Logger: slog.New(rec)})
	if waited := time.Since(start); waited > bus.DefaultPlacementWait {
		t.Errorf("waited %s for a lone server to place replicas", waited)
	}
	for _, s := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket, artifact.BucketStream} {
		if got := replicas(t, conn.JS, s); got != 1 {
			t.Errorf("%s: %d replicas, want 1", s, got)
		}
	}
	if msgs := rec.Messages(slog.LevelError); len(msgs) != 4 {
		t.Errorf("logged %q, want an error about fewer replicas for each stream and bucket", msgs)
	}
}
