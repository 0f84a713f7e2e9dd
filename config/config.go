package config

import (
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/diskspace"
)

// Config is agentd's configuration. The yaml tags are the keys of the
// configuration file.
type Config struct {
	// Data is the data directory: node key and credential, ledger, outbox,
	// embedded JetStream store.
	Data string `yaml:"data"`
	// Name is the node id. It appears in subjects, so it is limited to
	// letters, digits, '-' and '_'.
	Name string `yaml:"name"`
	// Roles the node runs (event.NodeRoles).
	Roles []string `yaml:"roles"`
	// NATS lists external server URLs; empty starts an embedded server.
	NATS []string `yaml:"nats"`
	// NATSListen is the embedded server's client address (host:port).
	NATSListen string `yaml:"nats_listen"`
	// NATSClusterListen is the embedded server's cluster (route) address;
	// empty: the embedded server is not clustered.
	NATSClusterListen string `yaml:"nats_cluster_listen"`
	// NATSRoutes lists the other embedded servers' cluster addresses
	// (nats://host:port) to route to.
	NATSRoutes []string `yaml:"nats_routes"`
	// NATSClusterName names the NATS cluster (every server of it the same).
	NATSClusterName string `yaml:"nats_cluster_name"`
	// NATSCreds is a NATS user credentials file (JWT and nkey seed) for
	// the external servers in NATS, used instead of the node's own NATS
	// user (DATA/node.nats.jwt) where you manage the servers' accounts
	// yourself; empty: the node's own.
	NATSCreds string `yaml:"nats_creds"`
	// NATSTLSCA is a PEM file of CAs. With external servers (NATS set)
	// it verifies their certificates (empty: the system roots, when TLS is
	// used). With the embedded server it verifies the certificates of the
	// clients, which must then present one, and of the other servers'
	// routes.
	NATSTLSCA string `yaml:"nats_tls_ca"`
	// NATSTLSCert and NATSTLSKey are a certificate and its key (PEM
	// files), both or neither. With external servers: a client
	// certificate for servers that verify clients. With the embedded
	// server: the certificate it serves TLS with, to clients and on its
	// cluster routes.
	NATSTLSCert string `yaml:"nats_tls_cert"`
	NATSTLSKey  string `yaml:"nats_tls_key"`
	// HTTPListen serves the JSON API (/api/*) and, unless ProbeListen is
	// set, /healthz, /readyz and /metrics. On an address that is not
	// loopback every request needs an operator token (see
	// HTTPAuthRequired).
	HTTPListen string `yaml:"http_listen"`
	// ProbeListen, if set, serves /healthz, /readyz and /metrics without
	// authentication (for probes and Prometheus); they are then not on
	// HTTPListen.
	ProbeListen string `yaml:"probe_listen"`
	// DebugListen, if set, serves the Go runtime's profiles
	// (net/http/pprof, /debug/pprof/) on a listener of its own, without
	// authentication: loopback only unless Insecure. Empty: off.
	DebugListen string `yaml:"debug_listen"`
	// Insecure allows the embedded NATS server (client or cluster
	// address) and gossip to listen on an address that is not loopback
	// without TLS or the gossip key, and serves the HTTP API there
	// without a token. The startup banner says so.
	Insecure bool `yaml:"insecure"`
	// GossipListen is the memberlist bind address (host:port); empty: no
	// gossip (a single node needs none).
	GossipListen string `yaml:"gossip_listen"`
	// GossipAdvertise is the address other members reach this node at
	// (host:port); empty: the bind address, which must then be a specific
	// address, not 0.0.0.0.
	GossipAdvertise string `yaml:"gossip_advertise"`
	// GossipKeyFile holds the gossip encryption key (base64 of 16, 24 or
	// 32 bytes); empty: gossip is not encrypted.
	GossipKeyFile string `yaml:"gossip_key_file"`
	// GossipLabel is prepended to every gossip packet: members with
	// another label are ignored (several clusters on one network).
	GossipLabel string `yaml:"gossip_label"`
	// GossipPreset is the failure-detection timing: "fast" (a dead node is
	// declared in about a second on a LAN) or "lan" (memberlist's LAN
	// defaults, about six seconds).
	GossipPreset string `yaml:"gossip_preset"`
	// Join lists gossip peers (host or host:port) to join at start.
	Join []string `yaml:"join"`
	// Log configures the node's slog output.
	Log LogConfig `yaml:"log"`
	// Executor configures the executor role.
	Executor ExecutorConfig `yaml:"executor"`
	// Orchestrator configures the orchestrator role.
	Orchestrator OrchestratorConfig `yaml:"orchestrator"`
	// Planner configures the planner role's model.
	Planner PlannerConfig `yaml:"planner"`
	// Notify says where the gates that open are sent.
	Notify NotifyConfig `yaml:"notify"`
	// Ledger configures the ledger of a ledger node (every role but a lone
	// executor).
	Ledger LedgerConfig `yaml:"ledger"`
	// Disk configures how the node guards its data dir's free space.
	Disk DiskConfig `yaml:"disk"`
	// Policy is the path of a safety policy file (docs/policy.md) that an
	// orchestrator records as the policy in force while the ledger holds
	// none; empty means the shipped default. Once the ledger holds one, a
	// different file only gets a warning: agentctl policy apply changes it.
	Policy string `yaml:"policy"`
}

// LogConfig configures logging.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is auto, text or json; auto is json when the log output is not
	// a terminal, text when it is.
	Format string `yaml:"format"`
}

// ExecutorConfig configures the executor role.
type ExecutorConfig struct {
	// Slots is how many steps run at once on this node.
	Slots int `yaml:"slots"`
	// DefaultTimeout applies to steps whose plan sets no timeout.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// Workdir is where steps run; empty means DATA/work (see WorkDir).
	Workdir string `yaml:"workdir"`
	// Queue is how many assignments the executor accepts beyond Slots,
	// started as slots free, so that no slot waits for the orchestration
	// round trip: -1 (the default) means QueuePerSlot × Slots, 0 none.
	Queue int `yaml:"queue"`
	// Capabilities the executor offers (docker, gpu, …); a step that
	// requires capabilities runs only where all are offered.
	Capabilities []string `yaml:"capabilities"`
	// EnvAllow names the variables of agentd's environment a step
	// inherits (a trailing * matches a prefix: LC_*); empty means the
	// runner's default (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE,
	// LC_*, TERM, TZ, TMPDIR). A step's own env is added to them.
	EnvAllow []string `yaml:"env_allow"`
	// RunAs is the user steps run as unless a step names its own (a name
	// or a numeric id); empty means agentd's user — except that an agentd
	// running as root then refuses every shell step: set it to an
	// unprivileged user, or to root to run steps as root on purpose.
	// Switching users needs agentd to run as root.
	RunAs string `yaml:"run_as"`
	// MaxOpenFiles is the open-files limit (RLIMIT_NOFILE) of a step's
	// processes; 0 leaves agentd's own.
	MaxOpenFiles int `yaml:"max_open_files"`
	// MaxAddressSpace is the virtual memory limit (RLIMIT_AS) of each of
	// a step's processes, a size ("4GiB"); empty leaves agentd's own.
	MaxAddressSpace string `yaml:"max_address_space"`
	// Landlock confines each step the policy allows without an approval
	// to writing in the policy's file scope (Linux Landlock, where the
	// kernel offers it): a program writing elsewhere — a cache in $HOME
	// included — fails. Off by default; widen the policy's scopes.files
	// for what steps must write.
	Landlock bool `yaml:"landlock"`
	// Forges are the forges git runs open pull requests on, by the name a
	// plan's git.credentials gives (forges.go).
	Forges map[string]ForgeConfig `yaml:"forges"`
}

// AddressSpaceBytes is MaxAddressSpace in bytes, 0 when it is empty or
// invalid (Validate reports an invalid one).
func (e ExecutorConfig) AddressSpaceBytes() int64 {
	if e.MaxAddressSpace == "" {
		return 0
	}
	n, err := diskspace.ParseBytes(e.MaxAddressSpace)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// OrchestratorConfig configures the orchestrator role.
type OrchestratorConfig struct {
	// LeaseTTL is ignored (0: unset). Deprecated: the lease TTL is a
	// cluster setting (agentctl cluster settings set --lease-ttl); a node
	// whose configuration sets this key logs a warning that it is ignored.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
}

// LedgerConfig configures a ledger node's ledger.
type LedgerConfig struct {
	// BootstrapTimeout is how long a ledger node that cannot follow the
	// events stream from where its ledger stands (the stream dropped
	// messages the ledger has not folded: a new node, or one down longer
	// than the stream keeps) looks for a peer to copy a verified ledger
	// from before it starts with the hole recorded as ledger.gap. 0: never
	// copy.
	BootstrapTimeout time.Duration `yaml:"bootstrap_timeout"`
}

// DiskConfig configures the data dir's free-space guard (internal/diskspace)
// and the embedded JetStream store's size. Both are per machine.
type DiskConfig struct {
	// Floor is the free space below which the node takes no new work and
	// is not ready: a size ("512MiB") or a share of the file system
	// ("5%"); empty: the smaller of 256 MiB and 5 % of the file system.
	Floor string `yaml:"floor"`
	// JetStreamMaxStore is the embedded JetStream store's byte limit, a
	// size ("10GiB"); empty: half of the data dir's file system.
	JetStreamMaxStore string `yaml:"jetstream_max_store"`
}

// Defaults that are not derived from the machine.
const (
	DefaultData         = "./data"
	DefaultNATSListen   = "127.0.0.1:4222"
	DefaultHTTPListen   = "127.0.0.1:8080"
	DefaultGossipPort   = "7946"
	DefaultGossipPreset = "fast"
	DefaultClusterName  = "agentic"
	DefaultLogLevel     = "info"
	DefaultLogFormat    = "auto"
	DefaultStepTimeout  = 10 * time.Minute
	// DefaultBootstrapTimeout leaves ledger nodes started together time
	// to come up before one gives up on copying another's ledger.
	DefaultBootstrapTimeout = 30 * time.Second
	fallbackName            = "agentd"
	slotsPerCPU             = 2
	workSubdir              = "work"
	minLeaseTTL             = time.Second
)

// Default returns a configuration that runs out of the box on one machine:
// every role, an embedded NATS server, data in ./data, the hostname as node
// name, and 2 executor slots per CPU (steps mix CPU-bound builds with
// waiting on the network; two per core keeps cores busy without
// thrashing). Executor.Workdir is the one field left empty: it follows Data
// (DATA/work) wherever Data is set, see WorkDir.
func Default() Config {
	return Config{
		Data:            DefaultData,
		Name:            defaultName(),
		Roles:           append([]string(nil), event.NodeRoles...),
		NATSListen:      DefaultNATSListen,
		HTTPListen:      DefaultHTTPListen,
		GossipPreset:    DefaultGossipPreset,
		NATSClusterName: DefaultClusterName,
		Log:             LogConfig{Level: DefaultLogLevel, Format: DefaultLogFormat},
		Executor: ExecutorConfig{
			Slots:          slotsPerCPU * runtime.NumCPU(),
			DefaultTimeout: DefaultStepTimeout,
			Queue:          -1,
		},
		Ledger:  LedgerConfig{BootstrapTimeout: DefaultBootstrapTimeout},
		Planner: defaultPlanner(),
		Notify:  NotifyConfig{Batch: DefaultNotifyBatch},
	}
}

// GossipPresets are the failure-detection timings gossip_preset accepts.
var GossipPresets = []string{"fast", "lan"}

// QueuePerSlot sizes the default executor queue: assignments held per
// slot beyond the running ones. A finished step's slot is refilled from the
// queue at once, while the leader learns of the result and sends more work
// a round trip later (about 30 ms: five synced writes); the queue must
// cover that round trip for short steps. Measured with 2,000 `true` steps
// in 50 chains on 4 slots (node/bench figure (f)): a queue of 4 keeps the
// node at 0.18 of `xargs -P 4`, 16 at 0.37, 32 at 0.59; 64 gains nothing
// more. The cost: work queued on a busy executor waits there while another
// may be idle (the start deadline counts only time with a free slot), so a
// cluster of long steps on uneven nodes may prefer executor.queue: 0.
const QueuePerSlot = 8

// ExecutorQueue is the executor's queue depth: Executor.Queue, or
// QueuePerSlot × Slots when it is -1.
func (c *Config) ExecutorQueue() int {
	if c.Executor.Queue < 0 {
		return QueuePerSlot * c.Executor.Slots
	}
	return c.Executor.Queue
}

// WorkDir is the executor's working directory: Executor.Workdir, or
// DATA/work when it is empty.
func (c *Config) WorkDir() string {
	if c.Executor.Workdir != "" {
		return c.Executor.Workdir
	}
	return filepath.Join(c.Data, workSubdir)
}

// defaultName is the hostname cut to a valid node name ("web-1.example.com"
// gives "web-1"), or "agentd" when there is none.
func defaultName() string {
	h, err := os.Hostname()
	if err != nil {
		return fallbackName
	}
	name := sanitizeName(h)
	if name == "" {
		return fallbackName
	}
	return name
}

// sanitizeName keeps the first DNS label of h and replaces characters a node
// name may not hold with '-'.
func sanitizeName(h string) string {
	b := []byte(h)
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == '.' {
			break
		}
		if !nameChar(c) {
			c = '-'
		}
		out = append(out, c)
	}
	return string(out)
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
