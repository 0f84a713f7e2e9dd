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
	str("http_listen", "http-listen", "AGENTIC_HTTP_LISTEN", "HTTP address for /healthz, /readyz, /metrics and the JSON API", func(c *Config) *string { return &c.HTTPListen }),
	str("gossip_listen", "gossip-listen", "AGENTIC_GOSSIP_LISTEN", "gossip (memberlist) bind address", func(c *Config) *string { return &c.GossipListen }),
	list("join", "join", "AGENTIC_JOIN", "gossip peers to join, comma-separated host[:port]", func(c *Config) *[]string { return &c.Join }),
	str("log.level", "log-level", "AGENTIC_LOG_LEVEL", "log level: debug, info, warn, error", func(c *Config) *string { return &c.Log.Level }),
	str("log.format", "log-format", "AGENTIC_LOG_FORMAT", "log format: auto, text, json (auto: json unless stderr is a terminal)", func(c *Config) *string { return &c.Log.Format }),
	integer("executor.slots", "executor-slots", "AGENTIC_EXECUTOR_SLOTS", "steps this node runs at once", func(c *Config) *int { return &c.Executor.Slots }),
	duration("executor.default_timeout", "executor-timeout", "AGENTIC_EXECUTOR_TIMEOUT", "timeout of steps whose plan sets none", func(c *Config) *time.Duration { return &c.Executor.DefaultTimeout }),
	str("executor.workdir", "executor-workdir", "AGENTIC_EXECUTOR_WORKDIR", "directory steps run in (default: DATA/work)", func(c *Config) *string { return &c.Executor.Workdir }),
	duration("orchestrator.lease_ttl", "lease-ttl", "AGENTIC_LEASE_TTL", "orchestrator leader lease TTL", func(c *Config) *time.Duration { return &c.Orchestrator.LeaseTTL }),
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
