package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/spf13/pflag"
)

func TestDefaultIsValidAndFilled(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if c.Data != "./data" || c.NATSListen != "127.0.0.1:4222" || c.HTTPListen != "127.0.0.1:8080" ||
		c.GossipListen != "" || c.GossipPreset != "fast" || c.Executor.Queue != -1 || c.Log.Level != "info" || c.Log.Format != "auto" ||
		c.Executor.DefaultTimeout != 10*time.Minute || c.Orchestrator.LeaseTTL != 0 {
		t.Errorf("Default() = %+v", c)
	}
	if c.Executor.Slots != 2*runtime.NumCPU() {
		t.Errorf("slots = %d, want %d", c.Executor.Slots, 2*runtime.NumCPU())
	}
	if !slices.Equal(c.Roles, event.NodeRoles) {
		t.Errorf("roles = %v, want %v", c.Roles, event.NodeRoles)
	}
	if c.Name == "" || checkName(c.Name) != nil {
		t.Errorf("name = %q, not a valid node name", c.Name)
	}
	if len(c.NATS) != 0 {
		t.Errorf("nats = %v, want embedded (empty)", c.NATS)
	}
	// Mutating the default roles must not reach event.NodeRoles.
	c.Roles[0] = "x"
	if event.NodeRoles[0] == "x" {
		t.Fatal("Default shares its Roles slice with event.NodeRoles")
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"web-1.example.com": "web-1",
		"box_2":             "box_2",
		"a b*c":             "a-b-c",
		".local":            "",
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWorkDirFollowsData(t *testing.T) {
	c := Default()
	c.Data = "/srv/agentic"
	if got := c.WorkDir(); got != filepath.Join("/srv/agentic", "work") {
		t.Errorf("WorkDir() = %q", got)
	}
	c.Executor.Workdir = "/tmp/w"
	if got := c.WorkDir(); got != "/tmp/w" {
		t.Errorf("WorkDir() = %q, want the explicit workdir", got)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, c Config)
		wantErr []string // substrings, each must appear
	}{
		{
			name: "full file",
			yaml: `data: /var/lib/agentic
name: node-a
roles: [executor, memory]
nats: [nats://a:4222, nats://b:4222]
nats_listen: 0.0.0.0:4333
http_listen: :9090
gossip_listen: 10.0.0.1:7000
join: [10.0.0.2, 10.0.0.3:7000]
log: {level: debug, format: json}
executor: {slots: 3, default_timeout: 90s, workdir: /w}
orchestrator: {lease_ttl: 2s}
ledger: {bootstrap_timeout: 10s}
planner: {model: "qwen2.5-coder:7b", api_key_env: OPENAI_KEY, temperature: 0.2, seed: 7, token_budget: 50000}
policy: /etc/agentic/policy.yaml
`,
			check: func(t *testing.T, c Config) {
				temp, seed := 0.2, int64(7)
				want := Config{
					Data: "/var/lib/agentic", Name: "node-a", Roles: []string{"executor", "memory"},
					NATS: []string{"nats://a:4222", "nats://b:4222"}, NATSListen: "0.0.0.0:4333",
					HTTPListen: ":9090", GossipListen: "10.0.0.1:7000", Join: []string{"10.0.0.2", "10.0.0.3:7000"},
					Log:          LogConfig{Level: "debug", Format: "json"},
					Executor:     ExecutorConfig{Slots: 3, DefaultTimeout: 90 * time.Second, Workdir: "/w", Queue: -1},
					Orchestrator: OrchestratorConfig{LeaseTTL: 2 * time.Second}, Policy: "/etc/agentic/policy.yaml",
					NATSClusterName: "agentic", GossipPreset: "fast",
					Ledger: LedgerConfig{BootstrapTimeout: 10 * time.Second},
					Planner: PlannerConfig{BaseURL: DefaultPlannerBaseURL, Model: "qwen2.5-coder:7b", APIKeyEnv: "OPENAI_KEY",
						Timeout: DefaultPlannerTimeout, ClaimTimeout: DefaultClaimTimeout, MaxTokens: DefaultPlannerMaxTokens, TokenBudget: 50000, Temperature: &temp, Seed: &seed,
						Mode: PlannerModePlan, Candidates: 1},
					Notify: NotifyConfig{Batch: DefaultNotifyBatch},
				}
				if !equal(c, want) {
					t.Errorf("got %+v\nwant %+v", c, want)
				}
			},
		},
		{
			name: "partial file keeps defaults",
			yaml: "# only the name\nname: solo\n",
			check: func(t *testing.T, c Config) {
				d := Default()
				d.Name = "solo"
				if !equal(c, d) {
					t.Errorf("got %+v\nwant %+v", c, d)
				}
			},
		},
		{
			name:  "empty file is the default",
			yaml:  "# nothing\n",
			check: func(t *testing.T, c Config) { d := Default(); assertEqual(t, c, d) },
		},
		{
			name:    "unknown key names file and line",
			yaml:    "name: a\nexecutor:\n  slotz: 3\n",
			wantErr: []string{"agentd.yaml:3: unknown key slotz"},
		},
		{
			name:    "every unknown key is reported",
			yaml:    "nmae: a\nrole: [x]\n",
			wantErr: []string{"agentd.yaml:1: unknown key nmae", "agentd.yaml:2: unknown key role"},
		},
		{
			name:    "integer duration is refused with a hint",
			yaml:    "orchestrator:\n  lease_ttl: 5\n",
			wantErr: []string{"agentd.yaml:2:", `durations are strings such as "30s"`},
		},
		{
			name:    "syntax error names the line",
			yaml:    "name: a\nroles: [executor\n",
			wantErr: []string{"agentd.yaml:"},
		},
		{
			name:    "wrong type",
			yaml:    "executor:\n  slots: many\n",
			wantErr: []string{"agentd.yaml:2:"},
		},
		{
			name:    "two documents",
			yaml:    "name: a\n---\nname: b\n",
			wantErr: []string{"more than one YAML document"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeFile(t, tt.yaml))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Load: no error, want %q", tt.wantErr)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("error %v does not wrap ErrInvalid", err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("Load(missing) = %v, want a not-exist error naming the file", err)
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		mutate  func(c *Config) // expected changes from the default
		wantErr []string
	}{
		{
			name: "all variables",
			env: []string{
				"AGENTIC_DATA=/d", "AGENTIC_NAME=n1", "AGENTIC_ROLES=planner, ui", "AGENTIC_NATS=nats://x:1,nats://y:2",
				"AGENTIC_NATS_LISTEN=:5222", "AGENTIC_HTTP_LISTEN=:81", "AGENTIC_GOSSIP_LISTEN=:7947",
				"AGENTIC_JOIN=h1,h2:7", "AGENTIC_LOG_LEVEL=warn", "AGENTIC_LOG_FORMAT=text",
				"AGENTIC_EXECUTOR_SLOTS=7", "AGENTIC_EXECUTOR_TIMEOUT=1m", "AGENTIC_EXECUTOR_WORKDIR=/w",
				"AGENTIC_LEASE_TTL=3s", "AGENTIC_POLICY=/p.yaml", "PATH=/bin", "UNRELATED",
			},
			mutate: func(c *Config) {
				c.Data, c.Name, c.Roles, c.NATS = "/d", "n1", []string{"planner", "ui"}, []string{"nats://x:1", "nats://y:2"}
				c.NATSListen, c.HTTPListen, c.GossipListen, c.Join = ":5222", ":81", ":7947", []string{"h1", "h2:7"}
				c.Log = LogConfig{Level: "warn", Format: "text"}
				c.Executor = ExecutorConfig{Slots: 7, DefaultTimeout: time.Minute, Workdir: "/w", Queue: -1}
				c.Orchestrator.LeaseTTL = 3 * time.Second
				c.Policy = "/p.yaml"
			},
		},
		{
			name:   "empty values are ignored",
			env:    []string{"AGENTIC_NAME=", "AGENTIC_EXECUTOR_SLOTS= "},
			mutate: func(c *Config) {},
		},
		{
			name:    "bad values name the variable, all of them",
			env:     []string{"AGENTIC_EXECUTOR_SLOTS=lots", "AGENTIC_LEASE_TTL=5", "AGENTIC_NAME=ok"},
			mutate:  func(c *Config) { c.Name = "ok" },
			wantErr: []string{"AGENTIC_EXECUTOR_SLOTS", `"lots"`, "AGENTIC_LEASE_TTL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			err := c.ApplyEnv(tt.env)
			want := Default()
			tt.mutate(&want)
			assertEqual(t, c, want)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ApplyEnv: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ApplyEnv = %v, want ErrInvalid", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Data = ""
	c.Name = "bad.name"
	c.Roles = []string{"executor", "chef", "executor"}
	c.NATS = []string{"http://x:1", "nats://"}
	c.NATSListen = "localhost"
	c.HTTPListen = "a:99999"
	c.GossipListen = "x:y"
	c.Join = []string{"h:1:2", ":7946"}
	c.Log = LogConfig{Level: "loud", Format: "xml"}
	c.Executor = ExecutorConfig{Slots: 0, DefaultTimeout: 0}
	c.Orchestrator.LeaseTTL = 100 * time.Millisecond
	c.Ledger.BootstrapTimeout = -time.Second
	err := c.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	want := []string{
		"data: must not be empty",
		`name: "bad.name"`,
		`unknown role "chef"`,
		`role "executor" listed twice`,
		`nats: "http://x:1": scheme`,
		`nats: "nats://": no host`,
		`nats_listen: "localhost"`,
		`http_listen: "a:99999": bad port`,
		`gossip_listen: "x:y": bad port`,
		`join: "h:1:2"`,
		`join: ":7946": want host or host:port: missing host`,
		`log.level: "loud"`,
		`log.format: "xml"`,
		"executor.slots: must be at least 1, got 0",
		"executor.default_timeout: must be positive",
		"orchestrator.lease_ttl: must be at least 1s",
		"ledger.bootstrap_timeout: must be 0 (never copy a peer's ledger) or positive, got -1s",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error lacks %q:\n%v", w, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != len(want) {
		t.Errorf("Validate reported %d problems, want %d:\n%v", n, len(want), err)
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, mutate := range []func(c *Config){
		func(c *Config) {
			c.GossipListen, c.Insecure = "10.0.0.9:7946", true
			c.Join = []string{"10.0.0.1", "node-b:7946", "[::1]:7946", "::1"}
		},
		func(c *Config) {
			c.GossipListen, c.GossipAdvertise, c.Insecure = "0.0.0.0:7946", "10.0.0.9:7946", true
		},
		func(c *Config) {
			c.NATSClusterListen, c.NATSRoutes = "127.0.0.1:6222", []string{"nats://127.0.0.1:6223"}
		},
		func(c *Config) { c.NATS = []string{"tls://a:4222", "nats://b"} },
		func(c *Config) { c.Roles = []string{"ui"} },
		func(c *Config) { c.HTTPListen = ":0" },
	} {
		c := Default()
		mutate(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	c := Default()
	c.Roles = nil
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "at least one role") {
		t.Errorf("Validate(no roles) = %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	// Each layer sets some fields; later layers win only on what they set.
	file := writeFile(t, "name: from-file\ndata: /file\nexecutor:\n  slots: 2\nlog:\n  level: warn\n")
	env := []string{"AGENTIC_DATA=/env", "AGENTIC_EXECUTOR_SLOTS=5", "AGENTIC_HTTP_LISTEN=:1111"}
	scratch := Default()
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	scratch.BindFlags(fs)
	if err := fs.Parse([]string{"--executor-slots", "9", "--roles=executor,memory"}); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(file, env, fs)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	want := Default()
	want.Name = "from-file"                     // file over default
	want.Log.Level = "warn"                     // file over default
	want.Data = "/env"                          // env over file
	want.HTTPListen = ":1111"                   // env over default
	want.Executor.Slots = 9                     // flag over env over file
	want.Roles = []string{"executor", "memory"} // flag over default
	assertEqual(t, c, want)
}

func TestResolveConfigFromEnvAndValidates(t *testing.T) {
	file := writeFile(t, "name: via-env\n")
	c, err := Resolve("", []string{"AGENTIC_CONFIG=" + file}, nil)
	if err != nil || c.Name != "via-env" {
		t.Fatalf("Resolve via AGENTIC_CONFIG = %+v, %v", c, err)
	}
	_, err = Resolve("", []string{"AGENTIC_EXECUTOR_SLOTS=0"}, nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "executor.slots") {
		t.Fatalf("Resolve with slots 0 = %v, want a validation error", err)
	}
}

func TestFlags(t *testing.T) {
	c := Default()
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	c.BindFlags(fs)
	for _, s := range settings {
		if fs.Lookup(s.flag) == nil {
			t.Errorf("flag --%s not registered", s.flag)
		}
	}
	err := fs.Parse([]string{"--data=/x", "--nats", "nats://a:1,nats://b:2", "--lease-ttl=7s", "--join="})
	if err != nil {
		t.Fatal(err)
	}
	if c.Data != "/x" || !slices.Equal(c.NATS, []string{"nats://a:1", "nats://b:2"}) || c.Orchestrator.LeaseTTL != 7*time.Second {
		t.Errorf("bound config = %+v", c)
	}
	// ApplyFlags copies only the flags that were set.
	other := Default()
	other.Name = "keep"
	other.Join = []string{"h"}
	if err := other.ApplyFlags(fs); err != nil {
		t.Fatal(err)
	}
	if other.Name != "keep" || other.Data != "/x" || len(other.NATS) != 2 || other.Join != nil {
		t.Errorf("ApplyFlags result = %+v", other)
	}
	bad := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	bad.SetOutput(new(strings.Builder))
	c.BindFlags(bad)
	if err := bad.Parse([]string{"--executor-slots=x"}); err == nil || !strings.Contains(err.Error(), "executor-slots") {
		t.Errorf("parse bad slots = %v", err)
	}
}

func equal(a, b Config) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

// normalized makes empty lists nil, so that "no list" and "an empty list"
// compare equal.
func normalized(c Config) Config {
	for _, l := range []*[]string{&c.Roles, &c.NATS, &c.NATSRoutes, &c.Join, &c.Executor.Capabilities} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return c
}

func assertEqual(t *testing.T, got, want Config) {
	t.Helper()
	if !equal(got, want) {
		t.Errorf("config\n got %+v\nwant %+v", got, want)
	}
}
