package membership

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrStopped: the membership was stopped.
var ErrStopped = errors.New("membership: stopped")

// Membership is this node's gossip membership: a running memberlist and
// the member table its callbacks keep.
type Membership struct {
	cfg     Config
	log     *slog.Logger
	ml      *memberlist.Memberlist
	changed chan struct{}
	now     func() time.Time

	mu struct {
		sync.Mutex
		table   *table
		meta    Meta
		encoded []byte
		joinErr error
	}
	// opMu orders UpdateMeta, Leave and Stop (memberlist panics on a
	// leave after shutdown).
	opMu    sync.Mutex
	left    atomic.Bool
	stopped atomic.Bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start runs memberlist with cfg and, when cfg.Join lists members, joins
// them in the background (again while no other member is alive: a node
// that starts before its peers, or is cut off, joins them when it can).
// ctx bounds only the start (resolving host names).
func Start(ctx context.Context, cfg Config) (*Membership, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	mc, err := cfg.build(ctx)
	if err != nil {
		return nil, err
	}
	m := &Membership{cfg: cfg, log: cfg.Logger.With("component", "membership"), changed: make(chan struct{}, 1), now: time.Now}
	m.mu.table = newTable(cfg.Meta.Node, cfg.Retention, MaxGone)
	m.mu.meta = cfg.Meta
	m.mu.encoded, _ = encodeMeta(cfg.Meta) // checked by build
	mc.Delegate = delegate{m}
	mc.Events = events{m}
	mc.Ping = pings{m}
	mc.Conflict = conflicts{m}
	mc.Logger = log.New(logWriter{m}, "", 0)
	m.ml, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: start gossip on %s: %w", cfg.Bind, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	if len(cfg.Join) > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.rejoinLoop(rctx)
		}()
	}
	m.log.Info("gossip started", "addr", m.Addr(), "preset", cfg.Preset, "encrypted", cfg.Key != nil, "label", cfg.Label, "join", cfg.Join)
	return m, nil
}

// Name is this node's gossip name (Meta.Node).
func (m *Membership) Name() string { return m.cfg.Meta.Node }

// Addr is the address the others reach this node at (host:port).
func (m *Membership) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if self, ok := m.mu.table.get(m.cfg.Meta.Node); ok {
		return self.Addr
	}
	return m.cfg.Advertise
}

// Members returns this node's view of the cluster, itself included, in
// name order: live and suspect members, and dead and left ones for
// Config.Retention after they went.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.table.list(m.now())
}

// Changed receives after any change of Members (level-triggered: one
// pending signal stands for any number of changes).
func (m *Membership) Changed() <-chan struct{} { return m.changed }

// JoinError is the last failure to join Config.Join while no other member
// was alive; nil once a join succeeded or when there is nothing to join.
func (m *Membership) JoinError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.joinErr
}

// Meta returns what this node announces.
func (m *Membership) Meta() Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.meta
}

// ErrLeft: the node left the gossip group; it announces nothing more.
var ErrLeft = errors.New("membership: left")

// UpdateMeta changes what this node announces (the node name stays) and
// broadcasts it, waiting for the broadcast until ctx ends (5 s when ctx
// has no deadline). Metadata that would not fit gossip is refused and
// nothing changes.
func (m *Membership) UpdateMeta(ctx context.Context, update func(*Meta)) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.updateMetaLocked(ctx, update)
}

// updateMetaLocked is UpdateMeta with opMu held.
func (m *Membership) updateMetaLocked(ctx context.Context, update func(*Meta)) error {
	switch {
	case m.stopped.Load():
		return ErrStopped
	case m.left.Load():
		return ErrLeft
	}
	m.mu.Lock()
	meta := m.mu.meta
	meta.Roles = slices.Clone(meta.Roles)
	meta.Capabilities = slices.Clone(meta.Capabilities)
	update(&meta)
	meta.Node = m.cfg.Meta.Node
	b, err := encodeMeta(meta)
	if err == nil {
		m.mu.meta, m.mu.encoded = meta, b
	}
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	if err := m.ml.UpdateNode(timeout(ctx)); err != nil {
		return fmt.Errorf("membership: announce metadata: %w", err)
	}
	return nil
}

// SetDraining announces that this node takes no new work (or takes it
// again).
func (m *Membership) SetDraining(ctx context.Context, draining bool) error {
	return m.UpdateMeta(ctx, func(meta *Meta) { meta.Draining = draining })
}

// Leave announces that this node leaves (Meta.Leaving), then leaves: the
// others record it as Left, not Dead. It waits for each broadcast until
// ctx ends (5 s when ctx has no deadline). Call Stop after it; calling it
// again does nothing.
func (m *Membership) Leave(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if m.left.Load() {
		return nil
	}
	err := m.updateMetaLocked(ctx, func(meta *Meta) { meta.Leaving = true })
	if errors.Is(err, ErrStopped) {
		return err
	}
	if err != nil {
		m.log.Warn("leave: announcing it first failed; the others may record a failure", "err", err)
	}
	m.left.Store(true)
	if err := m.ml.Leave(timeout(ctx)); err != nil {
		return fmt.Errorf("membership: leave: %w", err)
	}
	m.log.Info("left the gossip group")
	return nil
}

// Stop shuts gossip down and waits for this package's goroutines. Without
// Leave before it, the others detect a failure. Idempotent.
func (m *Membership) Stop() {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if m.stopped.Swap(true) {
		return
	}
	m.cancel()
	if err := m.ml.Shutdown(); err != nil {
		m.log.Warn("gossip shutdown", "err", err)
	}
	m.wg.Wait()
}

// rejoinLoop joins Config.Join whenever no other member is alive: at
// start, and after this node lost every peer. Peers are tried one at a
// time, so Stop waits for one connection attempt at most.
func (m *Membership) rejoinLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !m.left.Load() && m.alone() {
			if err := m.join(ctx); err != nil {
				failures++
				lvl := slog.LevelDebug
				if failures == 1 {
					lvl = slog.LevelWarn
				}
				m.log.Log(ctx, lvl, "gossip join failed; trying again", "join", m.cfg.Join, "every", m.cfg.RejoinEvery, "err", err)
			} else {
				if failures > 0 {
					m.log.Info("gossip joined", "join", m.cfg.Join, "after_failures", failures)
				}
				failures = 0
			}
		}
		t.Reset(m.cfg.RejoinEvery)
	}
}

// alone reports whether no other member is alive or suspect.
func (m *Membership) alone() bool {
	for _, mem := range m.Members() {
		if mem.Node != m.cfg.Meta.Node && !goneState(mem.State) {
			return false
		}
	}
	return true
}

// join tries each Join address until one answers.
func (m *Membership) join(ctx context.Context) error {
	var errs []error
	for _, j := range m.cfg.Join {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		addr, _ := joinAddr(j) // checked by build
		if _, err := m.ml.Join([]string{addr}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		m.mu.Lock()
		m.mu.joinErr = nil
		m.mu.Unlock()
		return nil
	}
	err := fmt.Errorf("membership: join: %w", errors.Join(errs...))
	m.mu.Lock()
	m.mu.joinErr = err
	m.mu.Unlock()
	return err
}

// timeout is what is left of ctx, or defaultUpdateTimeout.
func timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return defaultUpdateTimeout
}

// signal marks Members changed without blocking.
func (m *Membership) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// change applies f to the table and signals when it changed something.
func (m *Membership) change(f func(t *table, now time.Time) bool) {
	m.mu.Lock()
	changed := f(m.mu.table, m.now())
	m.mu.Unlock()
	if changed {
		m.signal()
	}
}

func nodeAddr(n *memberlist.Node) string {
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}
