package deploy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
)

// natsServer is one of deploy/nats's configurations.
type natsServer struct {
	file string
	opts *server.Options
	raw  map[string]any
}

func natsServers(t *testing.T) []natsServer {
	t.Helper()
	files, err := filepath.Glob("nats/*.conf")
	if err != nil || len(files) != 3 {
		t.Fatalf("deploy/nats holds %v (%v), want three server configurations", files, err)
	}
	var out []natsServer
	for _, f := range files {
		opts, err := server.ProcessConfigFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		raw, err := conf.ParseFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, natsServer{file: f, opts: opts, raw: raw})
	}
	return out
}

func serverNames(servers []natsServer) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.opts.ServerName)
	}
	return out
}

// TestNATSClusterConfigs: three servers of one JetStream cluster, syncing
// every write, each routing to all three under the names the servers
// carry, taking agentic's largest message, alike but for their names.
func TestNATSClusterConfigs(t *testing.T) {
	servers := natsServers(t)
	first := servers[0]
	var routes []string
	for _, s := range servers {
		routes = append(routes, fmt.Sprintf("nats-route://%s:%d", s.opts.ServerName, first.opts.Cluster.Port))
	}
	for _, s := range servers {
		o := s.opts
		if want := strings.TrimSuffix(filepath.Base(s.file), ".conf"); o.ServerName != want {
			t.Errorf("%s: server_name %q, want %q (the file's name)", s.file, o.ServerName, want)
		}
		js, _ := s.raw["jetstream"].(map[string]any)
		if !o.JetStream || !o.SyncAlways || js["sync_interval"] != "always" {
			t.Errorf("%s: JetStream %v, sync always %v: agentic needs JetStream with sync_interval: always", s.file, o.JetStream, o.SyncAlways)
		}
		if maxMsg := bus.EventsStreamConfig(bus.DefaultEventsSettings, 0).MaxMsgSize; o.MaxPayload < maxMsg {
			t.Errorf("%s: max_payload %d, below agentic's largest message (%d)", s.file, o.MaxPayload, maxMsg)
		}
		var got []string
		for _, r := range o.Routes {
			got = append(got, r.String())
		}
		if !slices.Equal(sorted(got), sorted(routes)) {
			t.Errorf("%s: routes %v, want every server's %v", s.file, got, routes)
		}
		if o.Cluster.Name == "" || o.Cluster.Port == 0 || o.Port == 0 || o.StoreDir == "" || o.LameDuckDuration == 0 {
			t.Errorf("%s: cluster %q port %d, client port %d, store %q, lame duck %s: all are needed", s.file, o.Cluster.Name, o.Cluster.Port, o.Port, o.StoreDir, o.LameDuckDuration)
		}
		a, b := without(first.raw, "server_name"), without(s.raw, "server_name")
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s differs from %s in more than server_name:\n%v\n%v", s.file, first.file, b, a)
		}
	}
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
