// Package deploy_test reads every file of deploy/ as the program that
// would read it in production reads it — nats-server's configuration
// parser, agentd's configuration and flags, yaml.v3 for Compose and the
// Helm chart's manifests, a small unit-file reader for systemd — and
// checks what the files say about each other: ports, paths, names,
// roles, the flags of agentd and agentctl (asked of the binaries built
// from this tree), and timeouts that must cover one another. No Docker
// engine, Kubernetes or systemd is needed.
package deploy_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/config"
	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/pflag"
	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ---------------------------------------------------------------------
// The binaries, and the flags they accept.

var bins struct {
	once            sync.Once
	dir, err        string
	agentd, agentcl string
}

// binaries builds agentd and agentctl from this tree once per test run.
func binaries(t *testing.T) (agentd, agentctl string) {
	t.Helper()
	bins.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			bins.err = "no go command to build agentd and agentctl: " + err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "agentic-deploy-test-")
		if err != nil {
			bins.err = err.Error()
			return
		}
		bins.dir = dir
		cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/agentd", "./cmd/agentctl")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Sprintf("go build: %v\n%s", err, out)
			return
		}
		bins.agentd, bins.agentcl = filepath.Join(dir, "agentd"), filepath.Join(dir, "agentctl")
	})
	if bins.err != "" {
		t.Fatal(bins.err)
	}
	return bins.agentd, bins.agentcl
}

var flagRE = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)`)

// helps caches helpFlags by command line.
var helps sync.Map

// helpFlags runs a binary's --help and returns the long flags it lists.
func helpFlags(t *testing.T, bin string, args ...string) map[string]bool {
	t.Helper()
	key := bin + " " + strings.Join(args, " ")
	if v, ok := helps.Load(key); ok {
		return v.(map[string]bool)
	}
	out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s --help: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("%s %s --help lists no flags:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
	helps.Store(key, flags)
	return flags
}

func agentdFlags(t *testing.T) map[string]bool {
	t.Helper()
	agentd, _ := binaries(t)
	return helpFlags(t, agentd)
}

// flagNames are the long flags of args ("--name=x", "--name x").
func flagNames(args []string) []string {
	var out []string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			out = append(out, name)
		}
	}
	return out
}

// agentdRun is what an agentd command line amounts to.
type agentdRun struct {
	cfg        config.Config
	configFile string
	drain      time.Duration
}

// resolveAgentd checks that every flag of args is one `agentd --help`
// lists, then resolves args exactly as agentd does (config.Resolve over the
// file --config names, through configFile when it is given to map the
// installed path to the repository's file) and validates the result.
func resolveAgentd(t *testing.T, where string, args []string, files map[string]string) agentdRun {
	t.Helper()
	known := agentdFlags(t)
	for _, f := range flagNames(args) {
		if !known[f] {
			t.Errorf("%s: agentd has no flag --%s", where, f)
		}
	}
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "")
	drain := fs.Duration("drain-timeout", 30*time.Second, "")
	scratch := config.Default()
	scratch.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s: agentd %s: %v", where, strings.Join(args, " "), err)
	}
	path := *cfgPath
	if path != "" {
		repo, ok := files[path]
		if !ok {
			t.Fatalf("%s: agentd --config %s: no file of deploy/ is installed there", where, path)
		}
		path = repo
	}
	cfg, err := config.Resolve(path, nil, fs)
	if err != nil {
		t.Fatalf("%s: agentd %s: %v", where, strings.Join(args, " "), err)
	}
	return agentdRun{cfg: cfg, configFile: *cfgPath, drain: *drain}
}

// ---------------------------------------------------------------------
// NATS configurations.

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

// ---------------------------------------------------------------------
// systemd.

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

// ---------------------------------------------------------------------
// Compose.

type compose struct {
	Name     string `yaml:"name"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Volumes  map[string]any            `yaml:"volumes"`
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	User        string                    `yaml:"user"`
	Hostname    string                    `yaml:"hostname"`
	Entrypoint  []string                  `yaml:"entrypoint"`
	Command     []string                  `yaml:"command"`
	Environment map[string]string         `yaml:"environment"`
	Volumes     []string                  `yaml:"volumes"`
	Ports       []string                  `yaml:"ports"`
	NetworkMode string                    `yaml:"network_mode"`
	Networks    yaml.Node                 `yaml:"networks"`
	DependsOn   map[string]map[string]any `yaml:"depends_on"`
	StopGrace   string                    `yaml:"stop_grace_period"`
	Profiles    []string                  `yaml:"profiles"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
}

// mounts maps a service's mount targets to their sources.
func (s composeService) mounts() map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		out[parts[1]] = parts[0]
	}
	return out
}

// ip is the service's fixed address on network name ("" if none).
func (s composeService) ip(name string) string {
	var nets map[string]struct {
		IPv4 string `yaml:"ipv4_address"`
	}
	if s.Networks.Kind != yaml.MappingNode || s.Networks.Decode(&nets) != nil {
		return ""
	}
	return nets[name].IPv4
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// scriptCommands are the agentctl command lines of a shell script, each
// split into fields (after "agentctl").
func scriptCommands(script string) [][]string {
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		if _, cmd, ok := strings.Cut(line, "agentctl "); ok {
			out = append(out, strings.Fields(cmd))
		}
	}
	return out
}

// agentctlArgs checks an agentctl command line against the flags its
// subcommand lists and returns the values of its flags and its arguments.
func agentctlArgs(t *testing.T, where string, fields []string) (args []string, flags map[string]string) {
	t.Helper()
	_, agentctl := binaries(t)
	var sub []string
	for _, f := range fields {
		if strings.HasPrefix(f, "-") {
			break
		}
		sub = append(sub, f)
	}
	if len(sub) < 2 {
		t.Fatalf("%s: agentctl %v: no subcommand", where, fields)
	}
	known := helpFlags(t, agentctl, sub[:2]...)
	flags = map[string]string{}
	for i := 2; i < len(fields); i++ {
		name, ok := strings.CutPrefix(fields[i], "--")
		if !ok {
			args = append(args, fields[i])
			continue
		}
		if !known[name] {
			t.Errorf("%s: agentctl %s has no flag --%s", where, strings.Join(sub[:2], " "), name)
		}
		if i+1 < len(fields) {
			flags[name] = fields[i+1]
			i++
		}
	}
	return args, flags
}

// TestCompose: the three-machine demo. Each machine's nats-server loads
// its deploy/nats file and stores where the volume is; each agentd shares
// its machine's network, starts with flags that exist and resolve to a
// valid configuration, uses the credential the keys service enrolled for
// its name and roles, gossips on its machine's address, and is checked
// and stopped within the right times.
func TestCompose(t *testing.T) {
	servers := natsServers(t)
	byName := map[string]natsServer{}
	for _, s := range servers {
		byName[s.opts.ServerName] = s
	}
	var c compose
	readYAML(t, "compose/compose.yaml", &c)
	const network = "agentic"
	_, subnet, err := net.ParseCIDR(c.Networks[network].IPAM.Config[0].Subnet)
	if err != nil {
		t.Fatalf("compose: network %s: %v", network, err)
	}
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			src := strings.Split(v, ":")[0]
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join("compose", src)); err != nil {
					t.Errorf("compose: %s mounts %s: %v", name, src, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("compose: %s mounts volume %s, which is not declared", name, src)
			}
		}
		for dep := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("compose: %s depends on %s, which is not a service", name, dep)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join("compose", s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("compose: %s builds from %s: %v", name, s.Build.Dockerfile, err)
			}
		}
	}

	// The machines: nats-server with its file, its store on a volume.
	ips := map[string]string{}
	for host, ns := range byName {
		s, ok := c.Services[host]
		if !ok {
			t.Fatalf("compose: no service %s for %s", host, ns.file)
		}
		if s.Image != "nats:"+server.VERSION {
			t.Errorf("compose: %s runs %s, want nats:%s (the server agentd embeds)", host, s.Image, server.VERSION)
		}
		if s.Hostname != host {
			t.Errorf("compose: %s has hostname %q; the routes name it %s", host, s.Hostname, host)
		}
		m := s.mounts()
		args := slices.Clone(s.Command)
		for i, a := range args {
			if src, ok := m[a]; ok {
				if filepath.Clean(filepath.Join("compose", src)) != ns.file {
					t.Errorf("compose: %s loads %s, want %s", host, src, ns.file)
				}
				args[i] = ns.file
			}
		}
		opts, err := server.ConfigureOptions(flag.NewFlagSet("nats-server", flag.ContinueOnError), args, func() {}, func() {}, func() {})
		if err != nil || opts.ServerName != host {
			t.Fatalf("compose: %s: nats-server %v: %+v %v", host, s.Command, opts, err)
		}
		if _, ok := m[opts.StoreDir]; !ok {
			t.Errorf("compose: %s stores JetStream in %s, which is not a volume", host, opts.StoreDir)
		}
		ip := s.ip(network)
		if parsed := net.ParseIP(ip); parsed == nil || !subnet.Contains(parsed) {
			t.Errorf("compose: %s address %q is not in %s", host, ip, subnet)
		}
		ips[host] = ip
	}

	// The keys service enrolls each node.
	keys := c.Services["keys"]
	enrolled := map[string][]string{} // data volume → name, roles
	for _, cmd := range scriptCommands(strings.Join(keys.Command, "\n")) {
		args, flags := agentctlArgs(t, "compose keys", cmd)
		if cmd[0] == "node" && cmd[1] == "enroll" {
			vol, ok := keys.mounts()[flags["out"]]
			if !ok || len(args) != 1 {
				t.Fatalf("compose keys: agentctl %v: --out is not a volume", cmd)
			}
			enrolled[vol] = []string{args[0], flags["roles"]}
			if flags["root"] != "/keys" {
				t.Errorf("compose keys: %v: the root is in /keys", cmd)
			}
		}
	}

	// The agentd of each machine.
	var machines []string
	for host := range byName {
		machines = append(machines, host)
	}
	for host := range byName {
		name := "agentd-" + strings.TrimPrefix(host, "node-")
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("compose: no service %s for machine %s", name, host)
		}
		if s.NetworkMode != "service:"+host {
			t.Errorf("compose: %s network_mode %q, want service:%s (the machine's network)", name, s.NetworkMode, host)
		}
		if s.DependsOn["keys"]["condition"] != "service_completed_successfully" {
			t.Errorf("compose: %s must wait for the keys service to finish", name)
		}
		run := resolveAgentd(t, "compose "+name, s.Command, nil)
		cfg := run.cfg
		vol := s.mounts()[cfg.Data]
		if e := enrolled[vol]; len(e) != 2 || e[0] != cfg.Name || e[1] != strings.Join(cfg.Roles, ",") {
			t.Errorf("compose: %s runs as %s with roles %v on volume %s; the keys service enrolled %v there", name, cfg.Name, cfg.Roles, vol, e)
		}
		if cfg.Name != host {
			t.Errorf("compose: %s is named %s on machine %s", name, cfg.Name, host)
		}
		var addrs []string
		for _, ip := range ips {
			addrs = append(addrs, ip)
		}
		checkAgentdOnServers(t, "compose "+name, cfg, servers, machines, addrs)
		if adv, _, _ := net.SplitHostPort(cfg.GossipAdvertise); adv != ips[host] {
			t.Errorf("compose: %s advertises gossip at %s, but %s is %s", name, adv, host, ips[host])
		}
		_, httpPort, _ := net.SplitHostPort(cfg.HTTPListen)
		if s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "http://127.0.0.1:"+httpPort+"/readyz") {
			t.Errorf("compose: %s health check %+v, want /readyz on port %s", name, s.Healthcheck, httpPort)
		}
		published := false
		for _, p := range c.Services[host].Ports {
			published = published || strings.HasSuffix(p, ":"+httpPort)
		}
		if !published {
			t.Errorf("compose: %s's HTTP port %s is not published by %s", name, httpPort, host)
		}
		grace, err := time.ParseDuration(s.StopGrace)
		if err != nil || grace < run.drain+10*time.Second {
			t.Errorf("compose: %s stop_grace_period %q, want at least --drain-timeout %s + 10s", name, s.StopGrace, run.drain)
		}
	}
	hosts := map[string]bool{}
	for _, ip := range ips {
		hosts[ip] = true
	}
	if len(hosts) != len(ips) {
		t.Errorf("compose: machines share addresses: %v", ips)
	}

	// agentctl for the operator.
	ctl := c.Services["ctl"]
	_, agentctl := binaries(t)
	help, err := exec.Command(agentctl, "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for k := range ctl.Environment {
		if !strings.Contains(string(help), "env "+k) {
			t.Errorf("compose: ctl sets %s, which agentctl --help does not name", k)
		}
	}
	if creds := ctl.Environment["AGENTIC_CREDS"]; ctl.mounts()[filepath.Dir(creds)] != "keys" {
		t.Errorf("compose: ctl reads credentials %s outside the keys volume", creds)
	}
}

// TestDockerfile: the image builds both commands with the Go of go.mod,
// runs agentd as the unprivileged user the chart runs it as, and exposes
// the ports agentd uses.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("compose/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(mod))
	if goVersion == nil || !strings.Contains(df, "FROM golang:"+goVersion[1]+" ") {
		t.Errorf("Dockerfile does not build with the Go of go.mod (%v)", goVersion)
	}
	for _, pkg := range []string{"./cmd/agentd", "./cmd/agentctl"} {
		if !strings.Contains(df, pkg) {
			t.Errorf("Dockerfile does not build %s", pkg)
		} else if _, err := os.Stat(filepath.Join("..", pkg)); err != nil {
			t.Errorf("Dockerfile builds %s: %v", pkg, err)
		}
	}
	for _, want := range []string{"--uid " + strconv.Itoa(chartUID), "USER agentic", `ENTRYPOINT ["agentd"]`, "EXPOSE 4222 6222 7946 8080"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// chartUID is the user the image and the chart run agentd as.
const chartUID = 10001

// ---------------------------------------------------------------------
// Helm.

// renderChart renders the chart's templates the way helm does for the
// constructs they use (field access, if; no sprig functions): with the
// chart's values, release name and namespace. A value a template names
// that values.yaml lacks is an error.
func renderChart(t *testing.T, dir, release string) []map[string]any {
	t.Helper()
	var values map[string]any
	readYAML(t, filepath.Join(dir, "values.yaml"), &values)
	var chart map[string]any
	readYAML(t, filepath.Join(dir, "Chart.yaml"), &chart)
	if chart["apiVersion"] != "v2" || chart["name"] != filepath.Base(dir) {
		t.Errorf("Chart.yaml: %v", chart)
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", dir, err)
	}
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": release, "Namespace": "default", "Service": "Helm"},
		"Chart":   chart,
	}
	var docs []map[string]any
	for _, f := range files {
		tmpl, err := template.New(filepath.Base(f)).Option("missingkey=error").ParseFiles(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		dec := yaml.NewDecoder(&out)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s renders YAML that does not parse: %v\n%s", f, err, out.String())
			}
			if doc != nil {
				docs = append(docs, doc)
			}
		}
	}
	return docs
}

// path walks a decoded YAML document: keys of maps, indexes of lists.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// TestHelmChart: three agentd pods whose embedded servers route to each
// other by their stable names, data on a volume claim per pod, probes on
// /healthz and /readyz, flags that exist and a configuration that
// validates, services that point at ports the pods open, and a grace
// period that covers the drain.
func TestHelmChart(t *testing.T) {
	const release = "agentic"
	docs := renderChart(t, "helm/agentic", release)
	kinds := map[string]map[string]any{}
	services := map[string]map[string]any{}
	for _, d := range docs {
		kind := str(d["kind"])
		if kind == "Service" {
			services[str(path(d, "metadata", "name"))] = d
			continue
		}
		kinds[kind] = d
	}
	sts, cm := kinds["StatefulSet"], kinds["ConfigMap"]
	if sts == nil || cm == nil || kinds["PodDisruptionBudget"] == nil {
		t.Fatalf("the chart renders %v, want a StatefulSet, a ConfigMap and a PodDisruptionBudget", slices.Collect(maps.Keys(kinds)))
	}
	replicas := path(sts, "spec", "replicas").(int)
	if str(path(sts, "spec", "podManagementPolicy")) != "Parallel" {
		t.Error("StatefulSet: pods must start in parallel: the first is ready only when JetStream has a majority")
	}
	headless := str(path(sts, "spec", "serviceName"))
	hs := services[headless]
	if hs == nil || str(path(hs, "spec", "clusterIP")) != "None" || path(hs, "spec", "publishNotReadyAddresses") != true {
		t.Errorf("StatefulSet serviceName %q: want a headless service that publishes pods before they are ready, got %v", headless, hs)
	}

	pod := path(sts, "spec", "template", "spec")
	ctr := path(pod, "containers", 0).(map[string]any)
	ports := map[string]int{}
	for _, p := range path(ctr, "ports").([]any) {
		ports[str(path(p, "name"))] = path(p, "containerPort").(int)
	}
	env := map[string]string{"POD_NAME": release + "-0", "POD_IP": "10.1.2.3"}
	for _, e := range path(ctr, "env").([]any) {
		if _, ok := env[str(path(e, "name"))]; !ok {
			t.Errorf("container env %v is not one the test knows a value for", e)
		}
	}
	var args []string
	for _, a := range path(ctr, "args").([]any) {
		s := str(a)
		for _, ref := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(s, -1) {
			v, ok := env[ref[1]]
			if !ok {
				t.Errorf("args %q refer to $(%s), which the container's env does not define", s, ref[1])
			}
			s = strings.ReplaceAll(s, ref[0], v)
		}
		args = append(args, s)
	}
	cfgFile := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(cfgFile, []byte(str(path(cm, "data", "agentd.yaml"))), 0o600); err != nil {
		t.Fatal(err)
	}
	var configPath string
	for _, m := range path(ctr, "volumeMounts").([]any) {
		if str(path(m, "name")) == "config" {
			configPath = str(path(m, "mountPath"))
		}
	}
	run := resolveAgentd(t, "chart", args, map[string]string{configPath: cfgFile})
	cfg := run.cfg
	if cfg.Name != release+"-0" {
		t.Errorf("chart: pod %s-0 runs as %s", release, cfg.Name)
	}
	for key, tt := range map[string]struct {
		addr string
		port string
	}{
		"nats_listen": {cfg.NATSListen, "nats"}, "nats_cluster_listen": {cfg.NATSClusterListen, "nats-cluster"},
		"gossip_listen": {cfg.GossipListen, "gossip-tcp"}, "gossip_advertise": {cfg.GossipAdvertise, "gossip-udp"},
		"http_listen": {cfg.HTTPListen, "http"},
	} {
		if _, p, _ := net.SplitHostPort(tt.addr); p != strconv.Itoa(ports[tt.port]) {
			t.Errorf("chart: %s %q, but the container's %s port is %d", key, tt.addr, tt.port, ports[tt.port])
		}
	}
	var wantRoutes, wantJoin []string
	for i := range replicas {
		host := fmt.Sprintf("%s-%d.%s", release, i, headless)
		wantRoutes = append(wantRoutes, fmt.Sprintf("nats://%s:%d", host, ports["nats-cluster"]))
		wantJoin = append(wantJoin, fmt.Sprintf("%s:%d", host, ports["gossip-tcp"]))
	}
	if !slices.Equal(cfg.NATSRoutes, wantRoutes) || !slices.Equal(cfg.Join, wantJoin) {
		t.Errorf("chart: routes %v and join %v, want every one of the %d pods: %v, %v", cfg.NATSRoutes, cfg.Join, replicas, wantRoutes, wantJoin)
	}
	if replicas != bus.ClusterReplicas {
		t.Errorf("chart: %d pods; streams get %d replicas on a cluster", replicas, bus.ClusterReplicas)
	}

	// The data directory on a claim per pod.
	var dataMount string
	for _, m := range path(ctr, "volumeMounts").([]any) {
		if str(path(m, "name")) == "data" {
			dataMount = str(path(m, "mountPath"))
		}
	}
	if dataMount != cfg.Data || str(path(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name")) != "data" {
		t.Errorf("chart: data in %s, the data volume at %q, claim %v", cfg.Data, dataMount, path(sts, "spec", "volumeClaimTemplates"))
	}

	// Probes.
	for probe, want := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p := path(ctr, probe, "httpGet")
		if str(path(p, "path")) != want || str(path(p, "port")) != "http" {
			t.Errorf("chart: %s %v, want GET %s on the http port", probe, p, want)
		}
	}
	if grace := time.Duration(path(pod, "terminationGracePeriodSeconds").(int)) * time.Second; grace < run.drain+10*time.Second {
		t.Errorf("chart: terminationGracePeriodSeconds %s, want at least --drain-timeout %s + 10s", grace, run.drain)
	}
	if uid := path(pod, "securityContext", "runAsUser"); uid != chartUID {
		t.Errorf("chart: runs as %v, the image's user is %d", uid, chartUID)
	}

	// Services point at ports the pod opens.
	for name, s := range services {
		for _, p := range path(s, "spec", "ports").([]any) {
			if _, ok := ports[str(path(p, "targetPort"))]; !ok {
				t.Errorf("chart: service %s targets port %v, which the pod does not name", name, path(p, "targetPort"))
			}
		}
	}

	// The credential the init container copies is the pod's.
	init := str(path(pod, "initContainers", 0, "args", 0))
	for _, f := range []string{"root.pub", "$(POD_NAME).node.key", "$(POD_NAME).node.cred"} {
		if !strings.Contains(init, "/etc/agentic/nodes/"+f) {
			t.Errorf("chart: the init container does not copy %s", f)
		}
	}
}

// ---------------------------------------------------------------------
// Scripts and documents.

// TestAgentdCommandsInDocs: every agentd command line shown in
// docs/deploy.md and deploy/README.md, and run by deploy/demo.sh, uses
// flags agentd has; demo.sh is valid shell.
func TestAgentdCommandsInDocs(t *testing.T) {
	known := agentdFlags(t)
	lineRE := regexp.MustCompile(`(?:^|[\s/"])agentd"?\s+(--.*)$`)
	for _, f := range []string{"../docs/deploy.md", "README.md", "demo.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		n := 0
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + lines[i]
			}
			m := lineRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			n++
			for _, flag := range flagNames(strings.Fields(m[1])) {
				if !known[flag] {
					t.Errorf("%s:%d: agentd has no flag --%s", f, i+1, flag)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no agentd command line found (the test would check nothing)", f)
		}
	}
	if runtime.GOOS != "windows" {
		if out, err := exec.Command("bash", "-n", "demo.sh").CombinedOutput(); err != nil {
			t.Errorf("bash -n demo.sh: %v\n%s", err, out)
		}
	}
}
