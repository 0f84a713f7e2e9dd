package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/envallow"
)

// DiskFloor is the parsed disk.floor (the zero Floor: the default).
func (c *Config) DiskFloor() (diskspace.Floor, error) {
	return diskspace.ParseFloor(c.Disk.Floor)
}

// JetStreamMaxStore is the parsed disk.jetstream_max_store in bytes (0:
// sized from the data dir's file system).
func (c *Config) JetStreamMaxStore() (int64, error) {
	if c.Disk.JetStreamMaxStore == "" {
		return 0, nil
	}
	n, err := diskspace.ParseBytes(c.Disk.JetStreamMaxStore)
	if err == nil && n < 1<<20 {
		err = fmt.Errorf("%q: at least 1MiB", c.Disk.JetStreamMaxStore)
	}
	return n, err
}

// Log levels and formats accepted by Validate.
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"auto", "text", "json"}
)

// Validate reports every problem of c at once (errors.Join); each wraps
// ErrInvalid and names the file key of the field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, key, fmt.Sprintf(format, args...)))
	}
	if c.Data == "" {
		bad("data", "must not be empty")
	}
	if err := checkName(c.Name); err != nil {
		bad("name", "%v", err)
	}
	c.validateRoles(bad)
	for _, u := range c.NATS {
		if err := checkNATSURL(u); err != nil {
			bad("nats", "%q: %v", u, err)
		}
	}
	for key, addr := range map[string]string{"nats_listen": c.NATSListen, "http_listen": c.HTTPListen} {
		if err := checkHostPort(addr); err != nil {
			bad(key, "%q: %v", addr, err)
		}
	}
	for key, addr := range map[string]string{"gossip_listen": c.GossipListen, "gossip_advertise": c.GossipAdvertise, "nats_cluster_listen": c.NATSClusterListen, "probe_listen": c.ProbeListen, "debug_listen": c.DebugListen} {
		if addr == "" {
			continue
		}
		if err := checkHostPort(addr); err != nil {
			bad(key, "%q: %v", addr, err)
		}
	}
	if len(c.Join) > 0 && c.GossipListen == "" {
		bad("join", "needs gossip_listen (--gossip-listen host:port): a node joins gossip only when it listens for it")
	}
	if c.GossipListen != "" && c.GossipAdvertise == "" && unspecifiedHost(c.GossipListen) {
		bad("gossip_advertise", "needed when gossip_listen %q binds every address: say which address other nodes reach this one at (--gossip-advertise host:port)", c.GossipListen)
	}
	if c.GossipKeyFile != "" {
		if c.GossipListen == "" {
			bad("gossip_key_file", "needs gossip_listen (--gossip-listen host:port): the key encrypts gossip, which is off")
		} else if _, err := ReadGossipKey(c.GossipKeyFile); err != nil {
			bad("gossip_key_file", "%v", err)
		}
	}
	if !slices.Contains(GossipPresets, c.GossipPreset) {
		bad("gossip_preset", "%q: want one of %v", c.GossipPreset, GossipPresets)
	}
	for _, r := range c.NATSRoutes {
		if err := checkNATSURL(r); err != nil {
			bad("nats_routes", "%q: %v", r, err)
		}
	}
	if len(c.NATSRoutes) > 0 && c.NATSClusterListen == "" {
		bad("nats_routes", "needs nats_cluster_listen (--nats-cluster-listen host:port)")
	}
	if c.NATSClusterListen != "" && len(c.NATS) > 0 {
		bad("nats_cluster_listen", "applies to the embedded server, but nats lists external servers")
	}
	if c.NATSClusterListen != "" {
		if err := checkName(c.NATSClusterName); err != nil {
			bad("nats_cluster_name", "%v", err)
		}
	}
	if c.NATSCreds != "" && len(c.NATS) == 0 {
		bad("nats_creds", "applies to external servers, but nats lists none (the embedded server takes in-process connections)")
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		bad("nats_tls_cert", "a certificate needs its key (nats_tls_key) and a key its certificate")
	}
	if len(c.NATS) == 0 && c.NATSTLSCA != "" && c.NATSTLSCert == "" {
		bad("nats_tls_ca", "with the embedded server it verifies clients' certificates, which needs TLS: set nats_tls_cert and nats_tls_key (--nats-tls-cert, --nats-tls-key)")
	}
	c.validateExposure(bad)
	c.validatePlanner(bad)
	c.validateNotify(bad)
	if c.Executor.Queue < -1 {
		bad("executor.queue", "must be -1 (8 per slot), 0 or more, got %d", c.Executor.Queue)
	}
	if err := envallow.Check(c.Executor.EnvAllow); err != nil {
		bad("executor.env_allow", "%v", err)
	}
	if c.Executor.MaxOpenFiles < 0 {
		bad("executor.max_open_files", "must be 0 (agentd's own) or more, got %d", c.Executor.MaxOpenFiles)
	}
	if c.Executor.MaxAddressSpace != "" {
		if n, err := diskspace.ParseBytes(c.Executor.MaxAddressSpace); err != nil {
			bad("executor.max_address_space", "%v", err)
		} else if n < 1<<20 {
			bad("executor.max_address_space", "%q is below 1MiB: no program would start", c.Executor.MaxAddressSpace)
		}
	}
	c.validateWorkDir(bad)
	c.validateForges(bad)
	for _, cp := range c.Executor.Capabilities {
		if err := checkName(cp); err != nil {
			bad("executor.capabilities", "%q: %v", cp, err)
		}
	}
	for _, j := range c.Join {
		if err := checkJoin(j); err != nil {
			bad("join", "%q: %v", j, err)
		}
	}
	if !slices.Contains(LogLevels, c.Log.Level) {
		bad("log.level", "%q: want one of %v", c.Log.Level, LogLevels)
	}
	if !slices.Contains(LogFormats, c.Log.Format) {
		bad("log.format", "%q: want one of %v", c.Log.Format, LogFormats)
	}
	if c.Executor.Slots < 1 {
		bad("executor.slots", "must be at least 1, got %d", c.Executor.Slots)
	}
	if c.Executor.DefaultTimeout <= 0 {
		bad("executor.default_timeout", "must be positive, got %s", c.Executor.DefaultTimeout)
	}
	if c.Orchestrator.LeaseTTL != 0 && c.Orchestrator.LeaseTTL < minLeaseTTL {
		bad("orchestrator.lease_ttl", "must be at least %s, got %s", minLeaseTTL, c.Orchestrator.LeaseTTL)
	}
	if c.Ledger.BootstrapTimeout < 0 {
		bad("ledger.bootstrap_timeout", "must be 0 (never copy a peer's ledger) or positive, got %s", c.Ledger.BootstrapTimeout)
	}
	if _, err := diskspace.ParseFloor(c.Disk.Floor); err != nil {
		bad("disk.floor", "%v", err)
	}
	if c.Disk.JetStreamMaxStore != "" {
		if _, err := c.JetStreamMaxStore(); err != nil {
			bad("disk.jetstream_max_store", "%v", err)
		} else if len(c.NATS) > 0 {
			bad("disk.jetstream_max_store", "applies to the embedded server, but nats lists external servers (set max_store in their configuration)")
		}
	}
	sortErrors(errs)
	return errors.Join(errs...)
}

// validateExposure refuses, unless Insecure, an embedded NATS server or
// gossip listening on an address that is not loopback without TLS or the
// gossip key. (The HTTP API on such an address asks for a token instead,
// see HTTPAuthRequired.)
func (c *Config) validateExposure(bad func(key, format string, args ...any)) {
	if c.Insecure {
		return
	}
	const why = "%q is not a loopback address: anyone who reaches it could use %s. %s, or say --insecure (insecure: true) to allow it"
	if len(c.NATS) == 0 && c.NATSTLSCert == "" {
		if exposed(c.NATSListen) {
			bad("nats_listen", why, c.NATSListen, "the bus", "Serve TLS with --nats-tls-cert and --nats-tls-key (and --nats-tls-ca to require client certificates)")
		}
		if exposed(c.NATSClusterListen) {
			bad("nats_cluster_listen", why, c.NATSClusterListen, "the cluster routes", "Serve TLS on the routes with --nats-tls-cert and --nats-tls-key (and --nats-tls-ca to verify the other servers)")
		}
	}
	if c.GossipKeyFile == "" && exposed(c.GossipListen) {
		bad("gossip_listen", why, c.GossipListen, "gossip in clear", "Encrypt it with --gossip-key-file")
	}
	if exposed(c.DebugListen) {
		bad("debug_listen", why, c.DebugListen, "the profiles (they show memory contents and can hold the process busy)", "Listen on 127.0.0.1 and reach it over SSH")
	}
}

// Loopback reports whether the listen address addr (host:port) binds only
// loopback: localhost or a loopback IP. An empty host, 0.0.0.0, :: and
// every other name or address are not loopback.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// exposed reports whether addr is a valid listen address that is not
// loopback (a bad one is reported as such, not twice).
func exposed(addr string) bool {
	return addr != "" && checkHostPort(addr) == nil && !Loopback(addr)
}

// HTTPAuthRequired reports whether the HTTP API asks for an operator
// token: when http_listen is not loopback, unless Insecure.
func (c *Config) HTTPAuthRequired() bool {
	return !c.Insecure && exposed(c.HTTPListen)
}

// InsecureExposure lists what Insecure leaves open on this
// configuration, one phrase each (nil when Insecure is off or nothing is
// exposed): the startup banner prints them.
func (c *Config) InsecureExposure() []string {
	if !c.Insecure {
		return nil
	}
	var out []string
	if len(c.NATS) == 0 && c.NATSTLSCert == "" {
		if exposed(c.NATSListen) {
			out = append(out, "NATS clients on "+c.NATSListen+" without TLS")
		}
		if exposed(c.NATSClusterListen) {
			out = append(out, "NATS routes on "+c.NATSClusterListen+" without TLS")
		}
	}
	if c.GossipKeyFile == "" && exposed(c.GossipListen) {
		out = append(out, "gossip on "+c.GossipListen+" unencrypted")
	}
	if exposed(c.HTTPListen) {
		out = append(out, "HTTP API on "+c.HTTPListen+" without a token")
	}
	if exposed(c.DebugListen) {
		out = append(out, "Go profiles on "+c.DebugListen)
	}
	return out
}

func (c *Config) validateRoles(bad func(key, format string, args ...any)) {
	if len(c.Roles) == 0 {
		bad("roles", "at least one role is needed, from %v", event.NodeRoles)
	}
	seen := make(map[string]bool, len(c.Roles))
	for _, r := range c.Roles {
		switch {
		case !slices.Contains(event.NodeRoles, r):
			bad("roles", "unknown role %q, want one of %v", r, event.NodeRoles)
		case seen[r]:
			bad("roles", "role %q listed twice", r)
		}
		seen[r] = true
	}
}

// validateWorkDir refuses an executor whose steps run as another user
// (executor.run_as) in the default work dir. DATA/work sits in the data
// dir, which agentd keeps 0700 — it holds the node's keys and ledger, so
// opening it to the step user is no option — and that user could reach
// neither a shell step's working directory nor a file edit's. A run_as
// that names no user found here is left to the runner, which fails each
// step saying so.
func (c *Config) validateWorkDir(bad func(key, format string, args ...any)) {
	name := c.Executor.RunAs
	if c.Executor.Workdir != "" || name == "" || !slices.Contains(c.Roles, event.RoleExecutor) {
		return
	}
	if uid, ok := lookupUID(name); !ok || uid == os.Geteuid() {
		return
	}
	bad("executor.workdir", "is empty, so steps would run in the default work dir %s, inside the data dir that agentd keeps private (0700): "+
		"the run_as user %s cannot reach it; set executor.workdir (--executor-workdir, AGENTIC_EXECUTOR_WORKDIR) to a directory outside the data dir that %s may write, "+
		"for instance one it owns (mkdir -p /srv/agentic-work && chown %s /srv/agentic-work)", c.WorkDir(), name, name, name)
}

// lookupUID is the user id of a user name or numeric id, as the runner
// looks it up.
func lookupUID(name string) (int, bool) {
	if u, err := user.Lookup(name); err == nil {
		n, err := strconv.Atoi(u.Uid)
		return n, err == nil
	}
	n, err := strconv.ParseUint(name, 10, 31)
	return int(n), err == nil
}

// sortErrors orders problems by text so reports are stable (the listen
// addresses are checked from a map).
func sortErrors(errs []error) {
	slices.SortStableFunc(errs, func(a, b error) int {
		switch {
		case a.Error() < b.Error():
			return -1
		case a.Error() > b.Error():
			return 1
		}
		return 0
	})
}

// checkName accepts names usable as one NATS subject token.
func checkName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) {
			return fmt.Errorf("%q: only letters, digits, '-' and '_' are allowed (it is used in subjects)", name)
		}
	}
	return nil
}

func checkNATSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("scheme must be nats, tls, ws or wss (like nats://host:4222)")
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// checkHostPort accepts "host:port" and ":port" with a numeric port.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	return checkPort(port)
}

// unspecifiedHost reports whether addr binds every address (0.0.0.0, ::
// or no host).
func unspecifiedHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// checkJoin accepts "host" or "host:port".
func checkJoin(addr string) error {
	if addr == "" {
		return errors.New("empty address")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// No port: the whole thing is a host, which must not hold a colon
		// unless it is a bracketed IPv6 literal.
		if net.ParseIP(addr) != nil || !strings.Contains(addr, ":") {
			return nil
		}
		return fmt.Errorf("want host or host:port: %w", err)
	}
	if host == "" {
		return errors.New("want host or host:port: missing host")
	}
	return checkPort(port)
}

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}
