package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

// nodeHarness runs agentctl against a real agentd node.
func nodeHarness(t *testing.T) (*harness, *nodetest.Node) {
	t.Helper()
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	return &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}, n
}

func streamCfg(t *testing.T, n *nodetest.Node, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := n.JS.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

// settingsEvents returns the cluster.settings events the node's ledger
// holds.
func settingsEvents(t *testing.T, n *nodetest.Node) []api.AuditLine {
	t.Helper()
	var out []api.AuditLine
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.ClusterSettings) {
			out = append(out, l)
		}
	}
	return out
}

func TestClusterSettingsSetChangesStreamsAndLedger(t *testing.T) {
	h, n := nodeHarness(t)

	r := h.run("cluster", "settings", "show", "-o", "json")
	in := decodeJSON[settings.InForce](t, r.stdout)
	if r.code != 0 || in.Recorded || in.Revision != 0 || in.Streams.Events.MaxAge != "720h" || in.Lease.TTL.Std() != event.DefaultLeaseTTL {
		t.Fatalf("show on a fresh node = %+v", r)
	}

	// set waits for the node to fold and apply: give it more than the
	// harness's 2s on a busy machine.
	r = h.run("cluster", "settings", "set", "--events-max-age", "48h", "--logs-max-bytes", "2GiB", "--logs-max-age", "0s", "--lease-ttl", "3s", "--claim-timeout", "2m", "--timeout", "20s")
	if r.code != 0 || !strings.Contains(r.stdout, "cluster settings revision 1, set by") || !strings.Contains(r.stdout, "they match") {
		t.Fatalf("set = %+v", r)
	}
	ev, logs := streamCfg(t, n, bus.EventsStream), streamCfg(t, n, bus.LogsStream)
	if ev.MaxAge != 48*time.Hour || ev.MaxBytes != 4<<30 || bus.SettingsRevision(ev) != 1 {
		t.Errorf("events stream %+v", ev)
	}
	if logs.MaxBytes != 2<<30 || logs.MaxAge != 0 || bus.SettingsRevision(logs) != 1 {
		t.Errorf("logs stream %+v", logs)
	}
	if lb := streamCfg(t, n, bus.LeaderBucketStream); lb.MaxAge != 3*time.Second || bus.SettingsRevision(lb) != 1 {
		t.Errorf("leader bucket %+v, want TTL 3s at revision 1", lb)
	}

	recorded := settingsEvents(t, n)
	if len(recorded) != 1 {
		t.Fatalf("ledger holds %d cluster.settings events, want 1", len(recorded))
	}
	var d event.ClusterSettingsData
	if err := json.Unmarshal(recorded[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	want := event.ClusterSettingsData{Revision: 1, Streams: event.ClusterStreamsData{
		Events: event.StreamSettingsData{MaxAge: "48h", MaxBytes: 4 << 30, Replicas: 1},
		Logs:   event.StreamSettingsData{MaxAge: "0s", MaxBytes: 2 << 30, Replicas: 1},
	}, Lease: event.LeaseSettingsData{TTL: event.Duration(3 * time.Second)},
		Planning: event.PlanningSettingsData{ClaimTimeout: event.Duration(2 * time.Minute)}}
	if d != want || recorded[0].Node != n.Operator.ID {
		t.Errorf("recorded %+v by %s, want %+v", d, recorded[0].Node, want)
	}

	r = h.run("cluster", "settings", "show", "-o", "json")
	in = decodeJSON[settings.InForce](t, r.stdout)
	if !in.Recorded || in.Revision != 1 || in.Seq != recorded[0].Seq || in.ClusterSettingsData != want || len(in.Drift) != 0 {
		t.Fatalf("show after set = %+v", in)
	}
	r = h.run("cluster", "settings", "show")
	for _, s := range []string{"revision 1", "AGENTIC_EVENTS  48h      4GiB", "AGENTIC_LOGS    none     2GiB", "leader lease TTL 3s (renewed every 1s", "claim timeout 2m0s", "they match"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("show text lacks %q:\n%s", s, r.stdout)
		}
	}

	// Drift, then --reapply puts the stream back to the settings.
	c := streamCfg(t, n, bus.EventsStream)
	c.MaxMsgs = 5000
	if _, err := n.JS.UpdateStream(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	r = h.run("cluster", "settings", "set", "--reapply", "-o", "json", "--timeout", "20s")
	in = decodeJSON[settings.InForce](t, r.stdout)
	if r.code != 0 || in.Revision != 2 || in.ClusterSettingsData.Streams != want.Streams || len(in.Drift) != 0 {
		t.Fatalf("reapply = %+v", r)
	}
	if got := streamCfg(t, n, bus.EventsStream).MaxMsgs; got != -1 {
		t.Errorf("max msgs after reapply %d", got)
	}
}

// TestClusterSettingsSetRefusesBadValues: every bad value is named, with
// the flag, and nothing is published.
func TestClusterSettingsSetRefusesBadValues(t *testing.T) {
	h, n := nodeHarness(t)
	tests := []struct {
		args  []string
		wants []string
	}{
		{nil, []string{"nothing to change"}},
		{[]string{"--events-max-age", "-1h"}, []string{"--events-max-age: max age -1h: want 0s (no limit) or at least 1h"}},
		{[]string{"--events-max-age", "720"}, []string{`--events-max-age: "720" is not a duration`}},
		{[]string{"--logs-max-age", "30d"}, []string{`--logs-max-age: "30d" is not a duration`, "hours are the largest unit"}},
		{[]string{"--logs-max-bytes", "lots"}, []string{`--logs-max-bytes: "lots" is not a byte count`}},
		{[]string{"--events-max-bytes", "-5GiB"}, []string{`--events-max-bytes: "-5GiB": a byte count cannot be negative`}},
		{[]string{"--events-max-bytes", "1MiB"}, []string{"--events-max-bytes: max bytes 1048576: want 0 (no limit) or at least 64MiB"}},
		{[]string{"--events-replicas", "0"}, []string{"--events-replicas: replicas 0: want 1 to 5"}},
		{[]string{"--logs-replicas", "abc"}, []string{`invalid argument "abc"`}},
		{[]string{"--lease-ttl", "100ms"}, []string{"--lease-ttl: ttl 100ms: want 500ms to 1m"}},
		{[]string{"--lease-ttl", "2"}, []string{`--lease-ttl: "2" is not a duration`}},
		{[]string{"--claim-timeout", "10ms"}, []string{"--claim-timeout: claim timeout 10ms: want 1s to 1h"}},
		{[]string{"--claim-timeout", "soon"}, []string{`--claim-timeout: "soon" is not a duration`}},
		{[]string{"--streams-repair", "fix"}, []string{`--streams-repair "fix": want alarm or restore`}},
		{[]string{"--streams-repair", ""}, []string{`--streams-repair "": want alarm or restore`}},
		{[]string{"--events-max-age", "10m", "--logs-max-bytes", "-1", "--logs-replicas", "7"},
			[]string{"--events-max-age: max age 10m", "--logs-max-bytes: \"-1\": a byte count cannot be negative", "--logs-replicas: replicas 7"}},
	}
	for _, tt := range tests {
		r := h.run(append([]string{"cluster", "settings", "set"}, tt.args...)...)
		if r.code != ExitUsage {
			t.Errorf("set %v: exit %d, want %d (%s)", tt.args, r.code, ExitUsage, r.stderr)
		}
		for _, w := range tt.wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("set %v: stderr %q lacks %q", tt.args, r.stderr, w)
			}
		}
	}
	if got := settingsEvents(t, n); len(got) != 0 {
		t.Fatalf("bad values published %d settings events", len(got))
	}
	if ev := streamCfg(t, n, bus.EventsStream); ev.MaxAge != bus.DefaultEventsSettings.MaxAge || bus.SettingsRevision(ev) != 0 {
		t.Fatalf("events stream changed: %+v", ev)
	}
}

// TestClusterSettingsSetWithoutNode: with no ledger node to read the
// settings in force from, nothing is published.
func TestClusterSettingsSetWithoutNode(t *testing.T) {
	h := newHarness(t)
	r := h.run("cluster", "settings", "set", "--events-max-age", "48h")
	if r.code != ExitError || !strings.Contains(r.stderr, "nothing was changed") {
		t.Fatalf("set without a node = %+v", r)
	}
	if evs := h.events(); len(evs) != 0 {
		t.Fatalf("published %d messages", len(evs))
	}
}

// TestClusterSettingsSetThatCannotApply: the change is recorded, the
// stream cannot take it (3 replicas on one server), and set says so.
func TestClusterSettingsSetThatCannotApply(t *testing.T) {
	h, n := nodeHarness(t)
	r := h.run("cluster", "settings", "set", "--events-replicas", "3", "--timeout", "20s")
	if r.code != ExitError || !strings.Contains(r.stderr, "cluster settings revision 1 is recorded, but the streams could not be brought to it") ||
		!strings.Contains(r.stderr, "replicas > 1 not supported") || !strings.Contains(r.stderr, "a replica count above 1 needs a NATS cluster") ||
		!strings.Contains(r.stdout, "DRIFT: node test-node found") || !strings.Contains(r.stdout, "AGENTIC_EVENTS replicas: expected 3, actual 1") {
		t.Fatalf("set = %+v", r)
	}
	if got := settingsEvents(t, n); len(got) != 1 {
		t.Fatalf("ledger holds %d settings events", len(got))
	}
	if got := streamCfg(t, n, bus.EventsStream).Replicas; got != 1 {
		t.Fatalf("replicas %d", got)
	}
}

// TestClusterSettingsStreamsRepair: the repair rule is a recorded setting;
// under restore a changed stream is still drift until an administrator
// applies the settings again (set --reapply: nodes recreate deleted
// streams, node/settings tests that); the rule set back to alarm is
// written as the default (absent).
func TestClusterSettingsStreamsRepair(t *testing.T) {
	h, n := nodeHarness(t)
	r := h.run("cluster", "settings", "show")
	if r.code != 0 || !strings.Contains(r.stdout, "streams repair: alarm") {
		t.Fatalf("show = %+v", r)
	}
	r = h.run("cluster", "settings", "set", "--streams-repair", "restore", "--timeout", "20s")
	if r.code != 0 || !strings.Contains(r.stdout, "streams repair: restore") {
		t.Fatalf("set = %+v", r)
	}
	c := streamCfg(t, n, bus.LogsStream)
	c.MaxMsgs = 100
	if _, err := n.JS.UpdateStream(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the change reported as drift", func() bool {
		r := h.run("cluster", "settings", "show")
		return strings.Contains(r.stdout, "AGENTIC_LOGS max_msgs")
	})
	if got := streamCfg(t, n, bus.LogsStream).MaxMsgs; got != 100 {
		t.Fatalf("a node changed the stream back (max msgs %d): only an administrator may", got)
	}
	r = h.run("cluster", "settings", "set", "--reapply", "--timeout", "20s")
	if r.code != 0 || streamCfg(t, n, bus.LogsStream).MaxMsgs != -1 {
		t.Fatalf("set --reapply = %+v, max msgs %d", r, streamCfg(t, n, bus.LogsStream).MaxMsgs)
	}
	r = h.run("cluster", "settings", "set", "--streams-repair", "alarm", "-o", "json", "--timeout", "20s")
	if in := decodeJSON[settings.InForce](t, r.stdout); r.code != 0 || in.Revision != 3 || in.Streams.Repair != "" {
		t.Fatalf("set alarm = %+v", r)
	}
	recorded := settingsEvents(t, n)
	if len(recorded) != 3 || !strings.Contains(string(recorded[0].Data), `"repair":"restore"`) || strings.Contains(string(recorded[2].Data), "repair") {
		t.Fatalf("recorded %+v", recorded)
	}
}

// TestPublishToMissingStream: a write to a cluster whose AGENTIC_EVENTS
// was deleted says so, not "is agentd running?"; one whose stream no
// longer takes the events' subjects says that.
func TestPublishToMissingStream(t *testing.T) {
	h := newHarness(t).withNode()
	st, err := h.conn.JS.Stream(context.Background(), bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Subjects = []string{"elsewhere.>"}
	if _, err := h.conn.JS.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	r := h.run("memory", "put", "shared", "k", "v")
	if r.code != ExitError || !strings.Contains(r.stderr, "stream AGENTIC_EVENTS on "+h.url+" does not take subject agentic.ev.memory.put (its subjects: elsewhere.>)") ||
		!strings.Contains(r.stderr, "agentctl cluster settings show lists the drift") {
		t.Fatalf("put to a stream with other subjects = %+v", r)
	}
	if err := h.conn.JS.DeleteStream(context.Background(), bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	r = h.run("memory", "put", "shared", "k", "v")
	if r.code != ExitError || !strings.Contains(r.stderr, "stream AGENTIC_EVENTS does not exist on "+h.url+": it was deleted or never created (nothing was published)") ||
		!strings.Contains(r.stderr, "streams-repair=restore") || strings.Contains(r.stderr, "is agentd running") {
		t.Fatalf("put to a deleted stream = %+v", r)
	}
	r = h.run("goal", "submit", "do something")
	if r.code != ExitError || !strings.Contains(r.stderr, "stream AGENTIC_EVENTS does not exist on "+h.url) || strings.Contains(r.stderr, "is agentd running") {
		t.Fatalf("goal submit to a deleted stream = %+v", r)
	}
}
