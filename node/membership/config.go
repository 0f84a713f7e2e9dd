package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Failure-detection presets (Config.Preset).
const (
	// PresetFast detects a killed node in about a second on a LAN: see
	// tune for every field it changes from memberlist's LAN defaults.
	PresetFast = "fast"
	// PresetLAN is memberlist's DefaultLANConfig: about six seconds.
	PresetLAN = "lan"
)

// Presets are the presets Config.Preset accepts.
var Presets = []string{PresetFast, PresetLAN}

// DefaultPort is the gossip port of a Join address given without one.
const DefaultPort = 7946

// Defaults of Config.
const (
	// DefaultRetention is how long a dead or left member stays in Members.
	DefaultRetention = time.Hour
	// DefaultRejoinEvery is how often Join is tried again while this node
	// sees no other live member.
	DefaultRejoinEvery = 2 * time.Second
	// MaxGone bounds the dead and left members kept (the oldest go first).
	MaxGone = 1024
	// defaultUpdateTimeout bounds a metadata broadcast or a leave when the
	// context has no deadline.
	defaultUpdateTimeout = 5 * time.Second
)

// deadNodeReclaimTime lets a node that restarts under the same name at
// another address be accepted as soon as its old address is dead or left
// (memberlist refuses it, "Conflicting address", while this is 0).
const deadNodeReclaimTime = time.Nanosecond

// Config configures a Membership.
type Config struct {
	// Meta is what this node announces; Meta.Node is its gossip name.
	// Its JSON must fit memberlist's 512 bytes.
	Meta Meta
	// Bind is the address gossip listens on (host:port, UDP and TCP);
	// port 0 picks a free one.
	Bind string
	// Advertise is the address the others reach this node at (host:port);
	// empty: Bind, whose host must then be a specific address (a host
	// with only loopback has no private address memberlist could pick).
	Advertise string
	// Join lists members to join (host or host:port, DefaultPort when the
	// port is missing). Empty: this node waits to be joined.
	Join []string
	// Key encrypts gossip (AES, 16, 24 or 32 bytes); nil: clear text.
	// Members with another key cannot join.
	Key []byte
	// Label is put on every packet; members with another label are
	// ignored (several clusters on one network).
	Label string
	// Preset is the failure-detection timing: PresetFast (the default
	// when empty) or PresetLAN.
	Preset string
	// Logger receives memberlist's log, at its levels.
	Logger *slog.Logger
	// Retention is how long a dead or left member stays in Members
	// (DefaultRetention if 0).
	Retention time.Duration
	// RejoinEvery is how often Join is tried while this node sees no
	// other live member (DefaultRejoinEvery if 0).
	RejoinEvery time.Duration

	// tune, in tests, adjusts memberlist's configuration last.
	tune func(*memberlist.Config)
}

// build fills c's defaults, checks it (every problem at once) and returns
// the memberlist configuration it gives.
func (c *Config) build(ctx context.Context) (*memberlist.Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Meta.Node == "" {
		bad("meta: the node name is empty")
	}
	if c.Preset == "" {
		c.Preset = PresetFast
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.RejoinEvery <= 0 {
		c.RejoinEvery = DefaultRejoinEvery
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	mc, err := preset(c.Preset)
	if err != nil {
		bad("%v", err)
		mc = memberlist.DefaultLANConfig()
	}
	bindHost, bindPort, err := splitAddr(ctx, c.Bind)
	if err != nil {
		bad("bind %q: %v", c.Bind, err)
	}
	adv := c.Advertise
	if adv == "" {
		if ip := net.ParseIP(bindHost); bindHost == "" || ip != nil && ip.IsUnspecified() {
			bad("bind %q listens on every address: give the address the others reach this node at (Advertise)", c.Bind)
		}
		adv = c.Bind
	}
	advHost, advPort, err := splitAddr(ctx, adv)
	if err != nil && c.Advertise != "" {
		bad("advertise %q: %v", c.Advertise, err)
	}
	if c.Key != nil {
		if err := memberlist.ValidateKey(c.Key); err != nil {
			bad("gossip key: %d bytes: want 16, 24 or 32 (AES-128, -192 or -256)", len(c.Key))
		}
	}
	if len(c.Label) > memberlist.LabelMaxSize {
		bad("label: %d bytes, at most %d", len(c.Label), memberlist.LabelMaxSize)
	}
	if _, err := encodeMeta(c.Meta); err != nil {
		bad("%v", err)
	}
	for _, j := range c.Join {
		if _, err := joinAddr(j); err != nil {
			bad("join %q: %v", j, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	mc.Name = c.Meta.Node
	mc.BindAddr, mc.BindPort = bindHost, bindPort
	mc.AdvertiseAddr, mc.AdvertisePort = advHost, advPort
	if c.Advertise == "" {
		// memberlist fills the port in when it picks one (bind port 0).
		mc.AdvertisePort = bindPort
	}
	mc.SecretKey = c.Key
	mc.Label = c.Label
	mc.DeadNodeReclaimTime = deadNodeReclaimTime
	if c.tune != nil {
		c.tune(mc)
	}
	return mc, nil
}

// preset returns memberlist's LAN defaults, tuned for the preset.
func preset(name string) (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	switch name {
	case PresetLAN:
	case PresetFast:
		tune(mc)
	default:
		return nil, fmt.Errorf("preset %q: want one of %v", name, Presets)
	}
	return mc, nil
}

// tune is the fast preset: every field it changes from DefaultLANConfig,
// documented in docs/architecture.md ("Membership").
func tune(mc *memberlist.Config) {
	// Probe a member every 200 ms instead of every second.
	mc.ProbeInterval = 200 * time.Millisecond
	// Wait 100 ms (not 500 ms) for a direct ack before the indirect
	// probes; a LAN round trip is well under a millisecond.
	mc.ProbeTimeout = 100 * time.Millisecond
	// Suspicion lasts SuspicionMult × max(1, log10 N) × ProbeInterval:
	// 400 ms below 10 nodes (LAN: 4 s). Below 3 no confirmation from
	// other members is awaited: one prober's verdict suffices.
	mc.SuspicionMult = 2
	// Gossip every 100 ms (not 200 ms): news of a death spreads sooner.
	mc.GossipInterval = 100 * time.Millisecond
}

// splitAddr splits host:port, the host an IP address or a name resolved
// now (within ctx, and 5 s at most).
func splitAddr(ctx context.Context, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("want host:port: %w", err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if host == "" || net.ParseIP(host) != nil {
		return host, port, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return "", 0, fmt.Errorf("resolve %q: %w", host, err)
	}
	// Prefer IPv4, as memberlist's own resolution does.
	i := slices.IndexFunc(ips, func(ip net.IP) bool { return ip.To4() != nil })
	return ips[max(i, 0)].String(), port, nil
}

// joinAddr gives a Join entry its port.
func joinAddr(j string) (string, error) {
	if j == "" {
		return "", errors.New("empty address")
	}
	if _, _, err := net.SplitHostPort(j); err == nil {
		return j, nil
	}
	if ip := net.ParseIP(j); ip != nil || !strings.Contains(j, ":") {
		return net.JoinHostPort(j, strconv.Itoa(DefaultPort)), nil
	}
	return "", errors.New("want host or host:port")
}

// encodeMeta is m as gossiped, checked against memberlist's limit.
func encodeMeta(m Meta) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	if len(b) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("meta: %d bytes encoded, gossip carries at most %d (fewer or shorter capabilities or roles)", len(b), memberlist.MetaMaxSize)
	}
	return b, nil
}

// decodeMeta reads a member's metadata; a member whose metadata does not
// decode (another program on the port, a far newer version) keeps its
// name and nothing else.
func decodeMeta(name string, b []byte) (Meta, error) {
	var m Meta
	var err error
	if len(b) > 0 {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		m = Meta{}
	}
	m.Node = name
	return m, err
}
