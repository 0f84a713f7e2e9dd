// Package diskspace watches the free space of a node's data directory and
// holds it above a floor: below the floor the node stops taking work (the
// executor starts no new attempt, the orchestrator assigns no new step,
// the ledger follower stops appending) and is not ready, with the reason;
// above it again, everything resumes by itself, without a restart.
//
// The node resumes once the free space passes the floor by an eighth of
// it, so that readiness does not flap around the floor.
//
// The floor is a per-machine setting (disk.floor in the node's
// configuration): a size ("512MiB") or a share of the file system ("5%");
// by default the smaller of DefaultFloorBytes and DefaultFloorPercent of
// the file system, so that a small data directory (a 64 MB volume) keeps
// most of its space usable and a large one keeps a margin that Pebble's
// flushes and compactions and JetStream's block files can still write
// into. The floor is prevention: Pebble cannot recover in-process from a
// failed write-ahead-log write (its commit pipeline stays failed until the
// store is reopened), so the node stops writing before the disk is full.
package diskspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
)

// Defaults of the floor: the smaller of 256 MiB and 5 % of the file system.
const (
	DefaultFloorBytes   = 256 << 20
	DefaultFloorPercent = 5.0
)

// resumeMargin: a data dir below its floor is above it again once its free
// space passes the floor by an eighth of it (hysteresis).
const resumeMargin = 8

// DefaultInterval is how often a Monitor reads the free space.
const DefaultInterval = time.Second

// Floor is the free-space floor as configured: a size in bytes, or a
// share of the file system in percent; the zero Floor is the default.
type Floor struct {
	Bytes   int64
	Percent float64
}

// ParseFloor reads a floor: "" (the default), a size with an optional
// unit ("300MiB", "1GiB", "64MB", "1048576"), or a percentage of the file
// system ("5%", "0.5%").
func ParseFloor(s string) (Floor, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Floor{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v >= 100 {
			return Floor{}, fmt.Errorf("disk floor %q: want a percentage above 0 and below 100, like 5%%", s)
		}
		return Floor{Percent: v}, nil
	}
	n, err := ParseBytes(s)
	if err != nil {
		return Floor{}, fmt.Errorf("disk floor %q: %w", s, err)
	}
	if n <= 0 {
		return Floor{}, fmt.Errorf("disk floor %q: must be positive", s)
	}
	return Floor{Bytes: n}, nil
}

var units = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseBytes reads a size: a number with an optional unit (KiB, MiB, GiB,
// TiB; KB, MB, GB, TB; K, M, G, T as binary; B).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("want a size like 256MiB, 1GiB or a percentage like 5%")
	}
	if n > (1<<62)/mult {
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

// String is the floor as configured ("default" for the zero Floor).
func (f Floor) String() string {
	switch {
	case f.Bytes > 0:
		return mib(uint64(f.Bytes))
	case f.Percent > 0:
		return strconv.FormatFloat(f.Percent, 'g', -1, 64) + "%"
	}
	return "default"
}

// For is the floor in bytes on a file system of total bytes.
func (f Floor) For(total uint64) uint64 {
	switch {
	case f.Bytes > 0:
		return uint64(f.Bytes)
	case f.Percent > 0:
		return uint64(float64(total) * f.Percent / 100)
	}
	return min(DefaultFloorBytes, uint64(float64(total)*DefaultFloorPercent/100))
}

// Usage is a file system's space as seen by an unprivileged writer.
type Usage struct {
	// Free is the space available to the node (statfs f_bavail).
	Free uint64
	// Total is the file system's size.
	Total uint64
}

// Stat reads the space of the file system holding dir.
func Stat(dir string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("diskspace: statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return Usage{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}

// IsNoSpace reports whether err comes from a full disk: ENOSPC (or EDQUOT),
// or an error whose text says so (Pebble's and nats-server's reports keep
// the text, not always the errno).
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "no space left on device") || strings.Contains(s, "disk quota exceeded")
}

// LowError is the reason a data dir is below its floor.
type LowError struct {
	Dir   string
	Free  uint64
	Floor uint64
	// Resume is set while the free space is back above the floor but not
	// yet past the margin the node resumes at.
	Resume uint64
}

func (e *LowError) Error() string {
	if e.Resume > 0 {
		return fmt.Sprintf("data dir %s has %s free, just above the floor of %s: resuming at %s", e.Dir, mib(e.Free), mib(e.Floor), mib(e.Resume))
	}
	return fmt.Sprintf("data dir %s has %s free, below the floor of %s (free space, or lower disk.floor)", e.Dir, mib(e.Free), mib(e.Floor))
}

func mib(n uint64) string {
	if n >= 10<<20 || n%(1<<20) == 0 {
		return strconv.FormatUint(n>>20, 10) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// Config configures a Monitor.
type Config struct {
	// Dir is the data directory.
	Dir string
	// Floor is the free-space floor (zero: the default).
	Floor Floor
	// Interval is how often the free space is read (DefaultInterval if 0).
	Interval time.Duration
	// Logger hears when the data dir goes below the floor and back.
	Logger *slog.Logger
	// stat reads the space (tests replace it); nil: Stat.
	stat func(string) (Usage, error)
}

// Monitor keeps the data dir's free space against its floor. Its methods
// are safe for concurrent use.
type Monitor struct {
	cfg   Config
	log   *slog.Logger
	state health.State

	mu struct {
		sync.Mutex
		usage Usage
		floor uint64
		low   error         // the present *LowError or statfs error; nil: above the floor
		ok    chan struct{} // closed while above the floor
	}
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a monitor of cfg.Dir, having read its space once (so Err is
// right from the start: a node started on a nearly full disk knows it
// before it writes anything). It starts nothing; Start polls.
func New(cfg Config) (*Monitor, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.stat == nil {
		cfg.stat = Stat
	}
	m := &Monitor{cfg: cfg, log: cfg.Logger}
	m.mu.ok = make(chan struct{})
	close(m.mu.ok)
	if _, err := cfg.stat(cfg.Dir); err != nil {
		return nil, err
	}
	m.Refresh()
	return m, nil
}

// Start polls the free space every Interval until Stop.
func (m *Monitor) Start() {
	if m.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.Refresh()
			}
		}
	}()
}

// Stop ends the polling.
func (m *Monitor) Stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cancel = nil
}

// Refresh reads the free space now and returns the result (nil: above the
// floor). Writers call it before a large write; the poller every Interval.
func (m *Monitor) Refresh() error {
	u, err := m.cfg.stat(m.cfg.Dir)
	floor := m.cfg.Floor.For(u.Total)
	var low error
	switch {
	case err != nil:
		low = err
	case u.Free < floor:
		low = &LowError{Dir: m.cfg.Dir, Free: u.Free, Floor: floor}
	}
	m.mu.Lock()
	was := m.mu.low
	if low == nil && was != nil && u.Free < floor+floor/resumeMargin {
		// Not yet clear of the floor: a write or a deleted file moves the
		// free space by a few blocks, and readiness must not flap.
		low = &LowError{Dir: m.cfg.Dir, Free: u.Free, Floor: floor, Resume: floor + floor/resumeMargin}
	}
	if err == nil {
		m.mu.usage, m.mu.floor = u, floor
	}
	m.mu.low = low
	switch {
	case was == nil && low != nil:
		m.mu.ok = make(chan struct{})
	case was != nil && low == nil:
		close(m.mu.ok)
	}
	// The check's state is set under the lock: concurrent readings (the
	// poller, a writer's Refresh) must not leave it out of order.
	defer m.mu.Unlock()
	switch {
	case was == nil && low != nil:
		m.log.Error("data dir below its free-space floor: taking no new work until space returns", "err", low)
		m.state.Set(low)
	case was != nil && low == nil:
		m.log.Info("data dir above its free-space floor again: resuming", "dir", m.cfg.Dir, "free_mib", u.Free>>20, "floor_mib", floor>>20)
		m.state.Set(nil)
	case low != nil && was.Error() != low.Error():
		m.state.Set(low) // the reason's figures changed
	}
	return low
}

// Err returns why the node must not take work (the data dir below its
// floor, or its space unreadable), or nil, as of the last reading.
func (m *Monitor) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.low
}

// Wait waits until the data dir is above its floor, or ctx ends.
func (m *Monitor) Wait(ctx context.Context) error {
	m.mu.Lock()
	ok, low := m.mu.ok, m.mu.low
	m.mu.Unlock()
	if low == nil {
		return nil
	}
	select {
	case <-ok:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("diskspace: waiting for free space in %s: %w", m.cfg.Dir, ctx.Err())
	}
}

// Usage returns the last reading and the floor in bytes.
func (m *Monitor) Usage() (u Usage, floor uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.usage, m.mu.floor
}

// Checks is the disk check: blocking, raising event.AlarmNoSpace while the
// data dir is below its floor.
func (m *Monitor) Checks() []health.Check {
	return []health.Check{{
		Name:     health.CheckDisk,
		Blocking: true,
		Alarm:    event.AlarmNoSpace,
		Probe:    m.state.Probe,
		Changed:  m.state.Changed,
	}}
}
