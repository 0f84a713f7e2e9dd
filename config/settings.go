package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// setting is one configuration value reachable from the environment and the
// command line. The table below is the single source of the env variable
// and flag names; doc.go lists it for humans.
type setting struct {
	key   string // file key, e.g. "executor.slots"
	flag  string // command-line flag, without "--"
	env   string // environment variable
	kind  string // pflag type name shown in --help
	usage string
	set   func(c *Config, v string) error
	get   func(c *Config) string
}

var settings = []setting{
	str("data", "data", "AGENTIC_DATA", "data directory (keys, ledger, embedded JetStream)", func(c *Config) *string { return &c.Data }),
	str("name", "name", "AGENTIC_NAME", "node name: letters, digits, - and _", func(c *Config) *string { return &c.Name }),
	list("roles", "roles", "AGENTIC_ROLES", "roles to run, comma-separated: orchestrator,planner,executor,memory,ui", func(c *Config) *[]string { return &c.Roles }),
	list("nats", "nats", "AGENTIC_NATS", "external NATS URLs, comma-separated (empty: start an embedded server)", func(c *Config) *[]string { return &c.NATS }),
	str("nats_listen", "nats-listen", "AGENTIC_NATS_LISTEN", "embedded NATS server client address", func(c *Config) *string { return &c.NATSListen }),
	str("nats_cluster_listen", "nats-cluster-listen", "AGENTIC_NATS_CLUSTER_LISTEN", "embedded NATS server cluster (route) address; empty: not clustered", func(c *Config) *string { return &c.NATSClusterListen }),
	list("nats_routes", "nats-routes", "AGENTIC_NATS_ROUTES", "other embedded servers' cluster URLs, comma-separated nats://host:port", func(c *Config) *[]string { return &c.NATSRoutes }),
	str("nats_cluster_name", "nats-cluster-name", "AGENTIC_NATS_CLUSTER_NAME", "NATS cluster name (the same on every server)", func(c *Config) *string { return &c.NATSClusterName }),
	str("nats_creds", "nats-creds", "AGENTIC_NATS_CREDS", "NATS user credentials file for external servers whose accounts you manage, instead of the node's own NATS user (DATA/node.nats.jwt)", func(c *Config) *string { return &c.NATSCreds }),
	str("nats_tls_ca", "nats-tls-ca", "AGENTIC_NATS_TLS_CA", "CA file (PEM): verifies the external NATS servers, or, with the embedded server, its clients' certificates and its routes", func(c *Config) *string { return &c.NATSTLSCA }),
	str("nats_tls_cert", "nats-tls-cert", "AGENTIC_NATS_TLS_CERT", "certificate (PEM): the client's for external NATS servers, or the one the embedded server serves TLS with (clients and routes); needs --nats-tls-key", func(c *Config) *string { return &c.NATSTLSCert }),
	str("nats_tls_key", "nats-tls-key", "AGENTIC_NATS_TLS_KEY", "key (PEM) of --nats-tls-cert", func(c *Config) *string { return &c.NATSTLSKey }),
	str("http_listen", "http-listen", "AGENTIC_HTTP_LISTEN", "HTTP address for the JSON API (and the probes unless --probe-listen); not loopback: an operator token is required", func(c *Config) *string { return &c.HTTPListen }),
	str("probe_listen", "probe-listen", "AGENTIC_PROBE_LISTEN", "HTTP address for /healthz, /readyz and /metrics without authentication; empty: on --http-listen", func(c *Config) *string { return &c.ProbeListen }),
	str("debug_listen", "debug-listen", "AGENTIC_DEBUG_LISTEN", "HTTP address for Go profiles (/debug/pprof/) without authentication; loopback unless --insecure; empty: off", func(c *Config) *string { return &c.DebugListen }),
	boolean("insecure", "insecure", "AGENTIC_INSECURE", "allow the embedded NATS server and gossip on non-loopback addresses without TLS or gossip key, and the HTTP API without a token", func(c *Config) *bool { return &c.Insecure }),
	str("gossip_listen", "gossip-listen", "AGENTIC_GOSSIP_LISTEN", "gossip (memberlist) bind address host:port; empty: no gossip", func(c *Config) *string { return &c.GossipListen }),
	str("gossip_advertise", "gossip-advertise", "AGENTIC_GOSSIP_ADVERTISE", "gossip address other nodes reach this one at (default: the bind address)", func(c *Config) *string { return &c.GossipAdvertise }),
	str("gossip_key_file", "gossip-key-file", "AGENTIC_GOSSIP_KEY_FILE", "file with the gossip encryption key (base64 of 16, 24 or 32 bytes)", func(c *Config) *string { return &c.GossipKeyFile }),
	str("gossip_label", "gossip-label", "AGENTIC_GOSSIP_LABEL", "gossip label: members with another label are ignored", func(c *Config) *string { return &c.GossipLabel }),
	str("gossip_preset", "gossip-preset", "AGENTIC_GOSSIP_PRESET", "failure detection timing: fast (~1 s) or lan (memberlist's LAN defaults, ~6 s)", func(c *Config) *string { return &c.GossipPreset }),
	list("join", "join", "AGENTIC_JOIN", "gossip peers to join, comma-separated host[:port]", func(c *Config) *[]string { return &c.Join }),
	str("log.level", "log-level", "AGENTIC_LOG_LEVEL", "log level: debug, info, warn, error", func(c *Config) *string { return &c.Log.Level }),
	str("log.format", "log-format", "AGENTIC_LOG_FORMAT", "log format: auto, text, json (auto: json unless stderr is a terminal)", func(c *Config) *string { return &c.Log.Format }),
	integer("executor.slots", "executor-slots", "AGENTIC_EXECUTOR_SLOTS", "steps this node runs at once", func(c *Config) *int { return &c.Executor.Slots }),
	duration("executor.default_timeout", "executor-timeout", "AGENTIC_EXECUTOR_TIMEOUT", "timeout of steps whose plan sets none", func(c *Config) *time.Duration { return &c.Executor.DefaultTimeout }),
	integer("executor.queue", "executor-queue", "AGENTIC_EXECUTOR_QUEUE", "assignments accepted beyond the slots, started as slots free (-1: 8 per slot; 0: none)", func(c *Config) *int { return &c.Executor.Queue }),
	list("executor.capabilities", "capabilities", "AGENTIC_CAPABILITIES", "capabilities this executor offers, comma-separated (docker,gpu)", func(c *Config) *[]string { return &c.Executor.Capabilities }),
	str("executor.workdir", "executor-workdir", "AGENTIC_EXECUTOR_WORKDIR", "directory steps run in (default: DATA/work, inside the private data dir: with run_as another user, set one that user may write)", func(c *Config) *string { return &c.Executor.Workdir }),
	list("executor.env_allow", "executor-env-allow", "AGENTIC_EXECUTOR_ENV_ALLOW", "variables of agentd's environment steps inherit, comma-separated; NAME* matches a prefix (empty: PATH,HOME,USER,LOGNAME,SHELL,LANG,LANGUAGE,LC_*,TERM,TZ,TMPDIR)", func(c *Config) *[]string { return &c.Executor.EnvAllow }),
	str("executor.run_as", "executor-run-as", "AGENTIC_EXECUTOR_RUN_AS", "user steps run as unless a step names one (empty: agentd's user; when agentd runs as root, empty refuses every shell step: set an unprivileged user, or root on purpose)", func(c *Config) *string { return &c.Executor.RunAs }),
	integer("executor.max_open_files", "executor-max-open-files", "AGENTIC_EXECUTOR_MAX_OPEN_FILES", "open-files limit of a step's processes (0: agentd's own)", func(c *Config) *int { return &c.Executor.MaxOpenFiles }),
	boolean("executor.landlock", "executor-landlock", "AGENTIC_EXECUTOR_LANDLOCK", "confine steps the policy allows without approval to writing in the policy's file scope (Linux Landlock)", func(c *Config) *bool { return &c.Executor.Landlock }),
	str("executor.max_address_space", "executor-max-address-space", "AGENTIC_EXECUTOR_MAX_ADDRESS_SPACE", "virtual memory limit of each process of a step, e.g. 8GiB (empty: agentd's own)", func(c *Config) *string { return &c.Executor.MaxAddressSpace }),
	duration("orchestrator.lease_ttl", "lease-ttl", "AGENTIC_LEASE_TTL", "deprecated and ignored: the lease TTL is a cluster setting (agentctl cluster settings set --lease-ttl)", func(c *Config) *time.Duration { return &c.Orchestrator.LeaseTTL }),
	duration("ledger.bootstrap_timeout", "ledger-bootstrap-timeout", "AGENTIC_LEDGER_BOOTSTRAP_TIMEOUT", "how long a ledger node whose stream lost messages it needs looks for a peer to copy a verified ledger from (0: never; the hole is recorded as ledger.gap)", func(c *Config) *time.Duration { return &c.Ledger.BootstrapTimeout }),
	str("disk.floor", "disk-floor", "AGENTIC_DISK_FLOOR", "free space below which the node takes no new work and is not ready: a size (512MiB) or a share of the disk (5%); empty: min(256MiB, 5%)", func(c *Config) *string { return &c.Disk.Floor }),
	str("disk.jetstream_max_store", "jetstream-max-store", "AGENTIC_JETSTREAM_MAX_STORE", "embedded JetStream store limit (10GiB); empty: half of the data dir's disk", func(c *Config) *string { return &c.Disk.JetStreamMaxStore }),
	str("policy", "policy", "AGENTIC_POLICY", "safety policy file", func(c *Config) *string { return &c.Policy }),
}

func str(key, flag, env, usage string, field func(*Config) *string) setting {
	return setting{
		key: key, flag: flag, env: env, kind: "string", usage: usage,
		set: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return *field(c) },
	}
}

func list(key, flag, env, usage string, field func(*Config) *[]string) setting {
	return setting{
		key: key, flag: flag, env: env, kind: "list", usage: usage,
		set: func(c *Config, v string) error { *field(c) = splitList(v); return nil },
		get: func(c *Config) string { return strings.Join(*field(c), ",") },
	}
}

func integer(key, flag, env, usage string, field func(*Config) *int) setting {
	return setting{
		key: key, flag: flag, env: env, kind: "int", usage: usage,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("want an integer, got %q", v)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

func boolean(key, flag, env, usage string, field func(*Config) *bool) setting {
	return setting{
		key: key, flag: flag, env: env, kind: "bool", usage: usage,
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("want true or false, got %q", v)
			}
			*field(c) = b
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*field(c)) },
	}
}

func duration(key, flag, env, usage string, field func(*Config) *time.Duration) setting {
	return setting{
		key: key, flag: flag, env: env, kind: "duration", usage: usage,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("want a duration like 30s or 5m, got %q", v)
			}
			*field(c) = d
			return nil
		},
		get: func(c *Config) string { return field(c).String() },
	}
}

// splitList splits a comma-separated list, trimming spaces and dropping
// empty items: "a, b,," gives [a b]; "" gives nil.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func settingByFlag(name string) (setting, bool) {
	for _, s := range settings {
		if s.flag == name {
			return s, true
		}
	}
	return setting{}, false
}
