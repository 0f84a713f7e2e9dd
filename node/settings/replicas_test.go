package settings_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/settings"
)

// TestDefaultsOnACluster: on a NATS cluster the defaults in force are the
// three replicas a node's start creates absent streams with, before and
// after a restore from a snapshot taken before any settings were
// recorded; recorded settings replace them whatever their replicas.
func TestDefaultsOnACluster(t *testing.T) {
	if d := settings.DefaultWith(0); d != settings.Default() {
		t.Errorf("DefaultWith(0) = %+v, want Default()", d)
	}
	want := settings.Default()
	want.Events.Replicas, want.Logs.Replicas = bus.ClusterReplicas, bus.ClusterReplicas
	if d := settings.DefaultWith(bus.ClusterReplicas); d != want {
		t.Errorf("DefaultWith(3) = %+v, want %+v", d, want)
	}

	c := settings.New(settings.Config{Replicas: bus.ClusterReplicas})
	if got := c.InForce(); got.Recorded || got.Streams.Events.Replicas != 3 || got.Streams.Logs.Replicas != 3 {
		t.Fatalf("defaults in force on a cluster: %+v, want three replicas for both streams", got.Streams)
	}
	_, snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := settings.New(settings.Config{Replicas: bus.ClusterReplicas})
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := r.Settings(); got != want {
		t.Errorf("restored defaults %+v, want %+v", got, want)
	}

	var l ledger
	one := settings.Default().Data()
	one.Revision = 1
	r.Fold(l.event(event.ClusterSettings, one))
	if got := r.Settings(); got.Revision != 1 || got.Events.Replicas != 1 || got.Logs.Replicas != 1 {
		t.Errorf("after recorded settings with one replica: %+v", got)
	}
}
