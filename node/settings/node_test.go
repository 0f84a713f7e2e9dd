package settings_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

// started is a real node (its embedded NATS server in operator mode for
// the root the node makes in its data directory) with a recorded log and
// a client connection with the operator credentials the node writes there
// (an administrator's: hand edits of a stream need one).
type started struct {
	n   *nodetest.Node
	log *logrec.Recorder
	js  jetstream.JetStream
	api *api.Client
}

func startNode(t *testing.T, cfg config.Config) *started {
	t.Helper()
	rec := &logrec.Recorder{}
	n := nodetest.StartLogged(t, cfg, slog.New(rec))
	return &started{n: n, log: rec, js: n.JS, api: n.API}
}

func (s *started) stop(t *testing.T) {
	t.Helper()
	s.n.Stop(t)
}

func (s *started) stream(t *testing.T, name string) jetstream.StreamConfig {
	t.Helper()
	st, err := s.js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().Config
}

// checked waits until the node has compared the streams with the
// settings and returns its answer.
func (s *started) checked(t *testing.T) settings.InForce {
	t.Helper()
	var in settings.InForce
	poll.Eventually(t, 20*time.Second, "the node to compare the streams", func() bool {
		return s.api.Call(context.Background(), settings.Method, nil, &in) == nil && !in.Checked.IsZero()
	})
	return in
}

// metric returns the value line of a metric sample whose line contains
// every part.
func (s *started) metric(t *testing.T, parts ...string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
next:
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		return line
	}
	return ""
}

func TestFreshNodeCreatesStreamsWithDefaults(t *testing.T) {
	s := startNode(t, nodetest.Config(t.TempDir()))
	in := s.checked(t)
	if in.Recorded || in.Revision != 0 || in.Node != "test-node" || len(in.Drift) != 0 ||
		in.Streams.Events.MaxAge != "720h" || in.Streams.Events.MaxBytes != 4<<30 || in.Streams.Logs.MaxAge != "168h" || in.Streams.Logs.MaxBytes != 1<<30 {
		t.Fatalf("settings in force on a fresh node: %+v", in)
	}
	for name, want := range map[string]bus.StreamSettings{bus.EventsStream: bus.DefaultEventsSettings, bus.LogsStream: bus.DefaultLogsSettings} {
		got := s.stream(t, name)
		if got.MaxAge != want.MaxAge || got.MaxBytes != want.MaxBytes || got.Replicas != 1 || bus.SettingsRevision(got) != 0 || got.Discard != jetstream.DiscardOld {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if line := s.metric(t, "agentic_stream_drift{", `stream="AGENTIC_EVENTS"`, `field="max_msgs"`); !strings.HasSuffix(line, " 0") {
		t.Errorf("drift metric %q, want 0", line)
	}
}

// TestDriftSurvivesRestartUncorrected: a stream changed with the JetStream
// API behind the node's back is reported as drift after a restart (log,
// metric, query API), and the restart does not put it back.
func TestDriftSurvivesRestartUncorrected(t *testing.T) {
	dir := t.TempDir()
	s := startNode(t, nodetest.Config(dir))
	s.checked(t)
	c := s.stream(t, bus.EventsStream)
	c.MaxMsgs = 1_000_000
	if _, err := s.js.UpdateStream(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	s.stop(t)

	s = startNode(t, nodetest.Config(dir))
	in := s.checked(t)
	want := settings.Drift{Stream: bus.EventsStream, Field: "max_msgs", Expected: "unlimited", Actual: "1000000"}
	if len(in.Drift) != 1 || in.Drift[0] != want {
		t.Fatalf("drift after restart: %+v, want %+v", in.Drift, want)
	}
	if got := s.stream(t, bus.EventsStream).MaxMsgs; got != 1_000_000 {
		t.Fatalf("restart restored the stream: max msgs %d", got)
	}
	logged := s.log.Find("stream drifts from the cluster settings")
	if len(logged) != 1 || logged[0].Level != slog.LevelError || logged[0].Attrs["field"] != "max_msgs" || logged[0].Attrs["actual"] != "1000000" {
		t.Fatalf("drift logged as %+v", logged)
	}
	if line := s.metric(t, "agentic_stream_drift{", `stream="AGENTIC_EVENTS"`, `field="max_msgs"`); !strings.HasSuffix(line, " 1") {
		t.Errorf("drift metric %q, want 1", line)
	}
	if line := s.metric(t, "agentic_stream_drift{", `stream="AGENTIC_LOGS"`, `field="max_bytes"`); !strings.HasSuffix(line, " 0") {
		t.Errorf("drift metric %q, want 0", line)
	}
}

// TestRestartWithAnotherConfigLeavesStreams: no node configuration touches
// a stream or the leader bucket; the deprecated lease_ttl is ignored, with
// a warning.
func TestRestartWithAnotherConfigLeavesStreams(t *testing.T) {
	dir := t.TempDir()
	s := startNode(t, nodetest.Config(dir))
	s.checked(t)
	before := map[string]jetstream.StreamConfig{bus.EventsStream: s.stream(t, bus.EventsStream), bus.LogsStream: s.stream(t, bus.LogsStream),
		bus.LeaderBucketStream: s.stream(t, bus.LeaderBucketStream)}
	const deprecated = "orchestrator.lease_ttl is deprecated and ignored: the lease TTL is a cluster setting"
	if got := s.log.Find(deprecated); len(got) != 0 {
		t.Fatalf("warned without lease_ttl set: %+v", got)
	}
	s.stop(t)

	cfg := nodetest.Config(dir)
	cfg.Orchestrator.LeaseTTL = 3 * time.Second
	cfg.Executor.Slots = 2
	cfg.Executor.DefaultTimeout = time.Minute
	s = startNode(t, cfg)
	if in := s.checked(t); len(in.Drift) != 0 {
		t.Fatalf("drift: %+v", in.Drift)
	}
	for name, want := range before {
		if got := s.stream(t, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed by a restart with another configuration:\n got %+v\nwant %+v", name, got, want)
		}
	}
	if got := s.log.Find(deprecated); len(got) != 1 || got[0].Level != slog.LevelWarn || got[0].Attrs["lease_ttl"] != "3s" {
		t.Errorf("lease_ttl set: warned %+v, want once at warn level", got)
	}
}
