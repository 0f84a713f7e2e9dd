package deploy_test

import (
	"bytes"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"
)

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

// authVolume and authFile are where the keys service writes the servers'
// auth part: the volume and the file's name in it.
var authVolume, authFile string

// etcNATS lays out a compose nats service's /etc/nats in a temp dir as its
// mounts make it — the configuration files from the repository, the auth
// part (auth) in the volume the keys service writes — and returns the
// path of the file its command loads. A server must not mount the keys
// volume (root.key): only the auth part's.
func etcNATS(t *testing.T, host string, s composeService, auth string) string {
	t.Helper()
	dir := t.TempDir()
	var conf string
	for target, src := range s.mounts() {
		if !strings.HasPrefix(target, "/etc/nats") {
			continue
		}
		rel, _ := filepath.Rel("/etc/nats", target)
		dst := filepath.Join(dir, rel)
		switch {
		case src == "keys":
			t.Errorf("compose: %s mounts the keys volume, which holds the root's key", host)
		case src == authVolume:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, authFile), []byte(auth), 0o644); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(src, "."):
			b, err := os.ReadFile(filepath.Join("compose", src))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if target == "/etc/nats/nats-server.conf" {
				conf = dst
			}
		}
	}
	if conf == "" {
		t.Fatalf("compose: %s mounts no /etc/nats/nats-server.conf", host)
	}
	return conf
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

	// The keys service writes the servers' auth part (keys nats-config)
	// into a volume the servers mount; here it is made from a fresh root.
	keysSvc := c.Services["keys"]
	var authConf, resolverDir string
	for _, cmd := range scriptCommands(strings.Join(keysSvc.Command, "\n")) {
		if len(cmd) > 1 && cmd[0] == "keys" && cmd[1] == "nats-config" {
			_, flags := agentctlArgs(t, "compose keys", cmd)
			vol, ok := keysSvc.mounts()[filepath.Dir(flags["out"])]
			if !ok || flags["from"] != "/keys" {
				t.Fatalf("compose keys: agentctl %v: --out is not on a volume, or --from is not the root", cmd)
			}
			root := t.TempDir()
			if _, err := natsauth.InitRoot(root); err != nil {
				t.Fatal(err)
			}
			b, err := natsauth.LoadBundle(root)
			if err != nil {
				t.Fatal(err)
			}
			// The servers keep account JWTs in the resolver dir: it must be
			// on their store's volume; here, a temp dir stands for it.
			resolverDir = flags["resolver-dir"]
			if authConf, err = natsauth.ServerConfig(b, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			authVolume = vol
			authFile = filepath.Base(flags["out"])
		}
	}
	if authConf == "" {
		t.Fatal("compose keys: no agentctl keys nats-config: the NATS servers would take anonymous clients")
	}
	if _, mounted := keysSvc.mounts()["/nats-auth"]; !mounted {
		t.Errorf("compose keys: the auth part goes to its own volume, which holds no secret")
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
			if _, ok := m[a]; ok {
				args[i] = etcNATS(t, host, s, authConf)
			}
		}
		opts, err := server.ConfigureOptions(flag.NewFlagSet("nats-server", flag.ContinueOnError), args, func() {}, func() {}, func() {})
		if err != nil || opts.ServerName != host {
			t.Fatalf("compose: %s: nats-server %v: %+v %v", host, s.Command, opts, err)
		}
		// Operator mode for the cluster's root: no anonymous client.
		if len(opts.TrustedOperators) != 1 || opts.SystemAccount == "" || opts.AccountResolver == nil || opts.NoAuthUser != "" {
			t.Errorf("compose: %s: not in operator mode for the cluster's root (operators %d, system account %q)", host, len(opts.TrustedOperators), opts.SystemAccount)
		}
		if opts.AccountResolver != nil {
			opts.AccountResolver.Close()
		}
		if vol, ok := m[filepath.Dir(resolverDir)]; !ok || !strings.HasPrefix(vol, "nats-") {
			t.Errorf("compose: %s keeps account JWTs in %s, which is not on its store's volume", host, resolverDir)
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
