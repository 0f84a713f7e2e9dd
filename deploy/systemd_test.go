package deploy_test

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/config"
	"github.com/nats-io/nats-server/v2/server"
)

// unit is a parsed systemd unit file: section → key → values in order.
type unit map[string]map[string][]string

// readUnit parses the unit-file syntax systemd reads: [Section] headers,
// Key=Value lines, comments starting with # or ;, lines continued with a
// trailing backslash. Anything else is an error naming the line.
func readUnit(path string) (unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := unit{}
	var section, pending string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line, pending = pending+" "+line, ""
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: bad section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("%s:%d: want Key=Value in a section, got %q", path, n, line)
		}
		u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
	}
	return u, sc.Err()
}

// get is the last value of key in section ("" if none).
func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func readUnitT(t *testing.T, path string) unit {
	t.Helper()
	u, err := readUnit(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			t.Errorf("%s: no [%s] section", path, s)
		}
	}
	return u
}

func seconds(t *testing.T, where, v string) time.Duration {
	t.Helper()
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %q: want seconds", where, v)
	}
	return time.Duration(n) * time.Second
}

// TestSystemdUnits: both services run as their own user, restart on
// failure, stop gracefully within their timeout (agentd drains, nats-server
// goes lame duck), keep their data in their StateDirectory, and start
// with flags and files that exist; agentd's configuration points at the
// servers of deploy/nats.
func TestSystemdUnits(t *testing.T) {
	servers := natsServers(t)
	natsUnit := readUnitT(t, "systemd/nats-server.service")
	agentdUnit := readUnitT(t, "systemd/agentd.service")

	for name, u := range map[string]unit{"nats-server.service": natsUnit, "agentd.service": agentdUnit} {
		svc := u["Service"]
		user := u.get("Service", "User")
		if user == "" || user == "root" || u.get("Service", "Group") != user {
			t.Errorf("%s: User=%q Group=%q: want a dedicated user and its group", name, user, u.get("Service", "Group"))
		}
		if u.get("Service", "Restart") != "on-failure" {
			t.Errorf("%s: Restart=%q, want on-failure", name, u.get("Service", "Restart"))
		}
		for _, k := range []string{"NoNewPrivileges", "PrivateTmp", "ProtectHome", "ProtectKernelModules", "ProtectKernelTunables", "ProtectControlGroups", "RestrictSUIDSGID"} {
			if u.get("Service", k) != "true" {
				t.Errorf("%s: %s=%q, want true", name, k, u.get("Service", k))
			}
		}
		if len(svc["ExecStart"]) != 1 || u.get("Service", "StateDirectory") == "" || u.get("Install", "WantedBy") != "multi-user.target" {
			t.Errorf("%s: ExecStart %v, StateDirectory %q, WantedBy %q", name, svc["ExecStart"], u.get("Service", "StateDirectory"), u.get("Install", "WantedBy"))
		}
	}

	// nats-server: the real flag parser with the installed path mapped to
	// deploy/nats/node-a.conf.
	argv := strings.Fields(natsUnit.get("Service", "ExecStart"))
	if argv[0] != "/usr/local/bin/nats-server" {
		t.Errorf("nats-server.service runs %s", argv[0])
	}
	installed := "/etc/nats/nats-server.conf"
	args := slices.Clone(argv[1:])
	if i := slices.Index(args, installed); i < 0 {
		t.Fatalf("nats-server.service: ExecStart %v does not read %s", argv, installed)
	} else {
		args[i] = servers[0].file
	}
	opts, err := server.ConfigureOptions(flag.NewFlagSet("nats-server", flag.ContinueOnError), args, func() {}, func() {}, func() {})
	if err != nil {
		t.Fatalf("nats-server %v: %v", args, err)
	}
	if opts.ServerName != servers[0].opts.ServerName || !opts.SyncAlways {
		t.Errorf("nats-server.service loads %+v", opts)
	}
	if dir := "/var/lib/" + natsUnit.get("Service", "StateDirectory"); dir != opts.StoreDir {
		t.Errorf("nats-server.service: StateDirectory %s, but JetStream stores in %s", dir, opts.StoreDir)
	}
	if stop := natsUnit.get("Service", "ExecStop"); !strings.Contains(stop, "SIGUSR2") {
		t.Errorf("nats-server.service: ExecStop=%q: stopping should enter lame duck mode (SIGUSR2)", stop)
	}
	if stop := seconds(t, "nats-server.service TimeoutStopSec", natsUnit.get("Service", "TimeoutStopSec")); stop < opts.LameDuckDuration+10*time.Second {
		t.Errorf("nats-server.service: TimeoutStopSec %s, want at least lame_duck_duration %s + 10s", stop, opts.LameDuckDuration)
	}

	// agentd: its flags, and the configuration it loads.
	argv = strings.Fields(agentdUnit.get("Service", "ExecStart"))
	if argv[0] != "/usr/local/bin/agentd" {
		t.Errorf("agentd.service runs %s", argv[0])
	}
	run := resolveAgentd(t, "agentd.service", argv[1:], map[string]string{"/etc/agentic/agentd.yaml": "systemd/agentd.yaml"})
	if run.configFile != "/etc/agentic/agentd.yaml" || "/etc/agentic" != "/etc/"+agentdUnit.get("Service", "ConfigurationDirectory") {
		t.Errorf("agentd.service: --config %q, ConfigurationDirectory %q", run.configFile, agentdUnit.get("Service", "ConfigurationDirectory"))
	}
	if dir := "/var/lib/" + agentdUnit.get("Service", "StateDirectory"); run.cfg.Data != dir {
		t.Errorf("agentd.service: StateDirectory is %s, but agentd.yaml keeps data in %s", dir, run.cfg.Data)
	}
	if agentdUnit.get("Service", "KillSignal") != "SIGTERM" || agentdUnit.get("Service", "KillMode") != "mixed" {
		t.Errorf("agentd.service: KillSignal=%q KillMode=%q: SIGTERM to agentd alone drains it", agentdUnit.get("Service", "KillSignal"), agentdUnit.get("Service", "KillMode"))
	}
	if stop := seconds(t, "agentd.service TimeoutStopSec", agentdUnit.get("Service", "TimeoutStopSec")); stop < run.drain+10*time.Second {
		t.Errorf("agentd.service: TimeoutStopSec %s, want at least --drain-timeout %s + 10s", stop, run.drain)
	}
	if !strings.Contains(agentdUnit.get("Unit", "After"), "nats-server.service") {
		t.Errorf("agentd.service: After=%q, want it after nats-server.service", agentdUnit.get("Unit", "After"))
	}
	checkAgentdOnServers(t, "systemd/agentd.yaml", run.cfg, servers, serverNames(servers), serverNames(servers))
	if !slices.Contains(serverNames(servers), run.cfg.Name) {
		t.Errorf("systemd/agentd.yaml: name %q is not one of the machines %v", run.cfg.Name, serverNames(servers))
	}
}

// checkAgentdOnServers: cfg connects to every server of deploy/nats on its
// client port at natsHosts, listens for gossip on the port it advertises,
// and joins joinHosts on that port.
func checkAgentdOnServers(t *testing.T, where string, cfg config.Config, servers []natsServer, natsHosts, joinHosts []string) {
	t.Helper()
	if len(cfg.NATS) != len(servers) {
		t.Errorf("%s: nats %v: want all %d servers, so the node outlives any one", where, cfg.NATS, len(servers))
	}
	var got []string
	for _, raw := range cfg.NATS {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if u.Port() != strconv.Itoa(servers[0].opts.Port) {
			t.Errorf("%s: %s: the servers listen on port %d", where, raw, servers[0].opts.Port)
		}
		got = append(got, u.Hostname())
	}
	if !slices.Equal(sorted(got), sorted(natsHosts)) {
		t.Errorf("%s: nats hosts %v, want %v", where, got, natsHosts)
	}
	_, listenPort, _ := net.SplitHostPort(cfg.GossipListen)
	_, advPort, _ := net.SplitHostPort(cfg.GossipAdvertise)
	if cfg.GossipListen == "" || listenPort != advPort {
		t.Errorf("%s: gossip_listen %q, gossip_advertise %q: the same port", where, cfg.GossipListen, cfg.GossipAdvertise)
	}
	got = nil
	for _, j := range cfg.Join {
		host, port, err := net.SplitHostPort(j)
		if err != nil {
			host, port = j, config.DefaultGossipPort
		}
		if port != listenPort {
			t.Errorf("%s: join %s: gossip listens on port %s", where, j, listenPort)
		}
		got = append(got, host)
	}
	if !slices.Equal(sorted(got), sorted(joinHosts)) {
		t.Errorf("%s: join %v, want the machines %v", where, got, joinHosts)
	}
}
