package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// Config configures a Host. Zero fields take their defaults.
type Config struct {
	// Runner are the runner options servers start with (user, env
	// allowlist, limits, Landlock, kill grace).
	Runner runner.Options
	// Logger logs the servers' starts, stops and standard error.
	Logger *slog.Logger
	// Version is the client version told to servers.
	Version string
	// StartTimeout bounds a server's start: initialize and tools/list
	// (default 30s).
	StartTimeout time.Duration
	// CallTimeout bounds a call when the step has no timeout (default
	// 2m).
	CallTimeout time.Duration
	// MaxResultBytes refuses a result longer than this once rendered
	// (default 1 MiB).
	MaxResultBytes int
	// MaxReportBytes bounds the definitions reported in executor.online
	// (default 256 KiB): beyond it, tools are reported by hash only.
	MaxReportBytes int
	// RelistAfter is how old a server's listing of its tools may be when
	// a call checks the tool's definition against its pin (default 1s):
	// older, it is listed again first. A server's tools are also listed
	// when it starts and when it says they changed
	// (notifications/tools/list_changed).
	RelistAfter time.Duration
	// Network, if set, gives the judge of the policy in force on network
	// targets ((*policy.Policy).NetworkAllowed): a server whose
	// grants.network it does not allow is not started, and says why in
	// its report. Nil: grants.network is not judged at start.
	Network func(ctx context.Context) (func(target string) (bool, string), error)
}

// Defaults of Config.
const (
	DefaultStartTimeout   = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxReportBytes = 256 << 10
	DefaultRelistAfter    = time.Second
)

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	if c.MaxReportBytes <= 0 {
		c.MaxReportBytes = DefaultMaxReportBytes
	}
	if c.RelistAfter <= 0 {
		c.RelistAfter = DefaultRelistAfter
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// key names a server: a plugin for a step user ("" the default).
type key struct{ plugin, user string }

// entry is a plugin in force, as the host knows it.
type entry struct {
	manifest event.PluginManifest
	hash     string
	// pins are the pinned hashes by tool name.
	pins map[string]string
}

// Host runs plugin servers. Its methods are safe for concurrent use.
type Host struct {
	cfg     Config
	log     *slog.Logger
	changed chan struct{}

	mu struct {
		sync.Mutex
		plugins map[string]entry
		servers map[key]*server
		stopped bool
	}
	// wg tracks the goroutines that start servers in the background.
	wg sync.WaitGroup
}

// New returns a host; it starts nothing.
func New(cfg Config) *Host {
	cfg = cfg.withDefaults()
	h := &Host{cfg: cfg, log: cfg.Logger, changed: make(chan struct{}, 1)}
	h.mu.plugins = map[string]entry{}
	h.mu.servers = map[key]*server{}
	return h
}

// Changed receives a value when Report may give something new: a server
// started, stopped or listed other tools.
func (h *Host) Changed() <-chan struct{} { return h.changed }

func (h *Host) notify() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Sync makes the plugins in force those of views (plugins.list): servers
// of plugins removed, or whose manifest changed, are stopped; the
// default user's server of each new plugin is started in the background
// (Changed fires when it is up). Pins are updated at once.
func (h *Host) Sync(views []plugin.View) {
	want := map[string]entry{}
	for _, v := range views {
		e := entry{manifest: v.Manifest, hash: v.ManifestHash, pins: map[string]string{}}
		for _, t := range v.Tools {
			if t.Pin == nil {
				continue
			}
			if _, tool, err := event.SplitToolName(t.Name); err == nil {
				e.pins[tool] = t.Pin.Hash
			}
		}
		want[v.Name] = e
	}
	var stop []*server
	var start []key
	h.mu.Lock()
	if h.mu.stopped {
		h.mu.Unlock()
		return
	}
	for k, s := range h.mu.servers {
		if e, ok := want[k.plugin]; !ok || e.hash != s.manifestHash {
			stop = append(stop, s)
			delete(h.mu.servers, k)
		}
	}
	for name, e := range want {
		k := key{plugin: name}
		if _, ok := h.mu.servers[k]; !ok {
			h.mu.servers[k] = newServer(name, "", e, h)
			start = append(start, k)
		}
	}
	changed := len(stop) > 0 || !maps.EqualFunc(h.mu.plugins, want, func(a, b entry) bool {
		return a.hash == b.hash && maps.Equal(a.pins, b.pins)
	})
	h.mu.plugins = want
	for _, k := range start {
		s := h.mu.servers[k]
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), h.cfg.StartTimeout)
			defer cancel()
			_, _ = s.ensure(ctx)
			h.notify()
		}()
	}
	h.mu.Unlock()
	for _, s := range stop {
		s.stop()
	}
	if changed {
		h.notify()
	}
}

// Report is what executor.online carries: every tool of the running
// servers with its hash (and definition, within MaxReportBytes), and how
// each plugin's server fares.
func (h *Host) Report() ([]event.ToolReport, []event.PluginReport) {
	h.mu.Lock()
	servers := make([]*server, 0, len(h.mu.servers))
	for _, k := range slices.SortedFunc(maps.Keys(h.mu.servers), func(a, b key) int {
		if a.plugin != b.plugin {
			return compare(a.plugin, b.plugin)
		}
		return compare(a.user, b.user)
	}) {
		servers = append(servers, h.mu.servers[k])
	}
	h.mu.Unlock()
	var tools []event.ToolReport
	var plugins []event.PluginReport
	budget := h.cfg.MaxReportBytes
	for _, s := range servers {
		st := s.status()
		if !st.started {
			continue // starting: reported once up
		}
		plugins = append(plugins, event.PluginReport{Plugin: s.plugin, Manifest: s.manifestHash, User: st.user, Error: st.err})
		for _, name := range slices.Sorted(maps.Keys(st.tools)) {
			t := st.tools[name]
			r := event.ToolReport{Name: s.plugin + "/" + name, Hash: t.hash, User: st.user}
			if n := t.size; n <= budget {
				def := t.def
				r.Definition = &def
				budget -= n
			}
			tools = append(tools, r)
		}
	}
	return tools, plugins
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Stop stops every server and waits for the background starts. The host
// starts nothing afterwards.
func (h *Host) Stop() {
	h.mu.Lock()
	h.mu.stopped = true
	servers := slices.Collect(maps.Values(h.mu.servers))
	h.mu.servers = map[key]*server{}
	h.mu.Unlock()
	for _, s := range servers {
		s.stop()
	}
	h.wg.Wait()
	// A start that raced Stop stopped its own server (ensure checks).
	for _, s := range servers {
		s.stop()
	}
}

// spawn runs f on a goroutine Stop waits for; nothing once stopped.
func (h *Host) spawn(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.stopped {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
}

// errStopped: the host was stopped.
var errStopped = errors.New("pluginhost: stopped")

// server returns the server of (plugin, user) and the plugin's entry,
// creating the server (not started) when absent.
func (h *Host) server(name, user string) (*server, entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.stopped {
		return nil, entry{}, errStopped
	}
	e, ok := h.mu.plugins[name]
	if !ok {
		return nil, entry{}, fmt.Errorf("%w: %q is not in force on this executor (agentctl plugin ls)", plugin.ErrUnknownPlugin, name)
	}
	k := key{name, user}
	s := h.mu.servers[k]
	if s == nil {
		s = newServer(name, user, e, h)
		h.mu.servers[k] = s
	}
	return s, e, nil
}
