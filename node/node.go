package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/membership"
	"github.com/agentic-dev/agentic/node/nodes"
	"github.com/agentic-dev/agentic/node/notify"
	"github.com/agentic-dev/agentic/node/plugins"
	"github.com/agentic-dev/agentic/node/policies"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/artifacts"
	"github.com/agentic-dev/agentic/roles/executor"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/agentic-dev/agentic/roles/orchestrator/runindex"
	"github.com/agentic-dev/agentic/roles/orchestrator/tracing"
	"github.com/agentic-dev/agentic/roles/planner"
	"github.com/agentic-dev/agentic/roles/ui/web"
	"github.com/nats-io/nats.go"
)

// Version is the agentic version, set at build time with
// -ldflags "-X github.com/agentic-dev/agentic/node.Version=…".
var Version = "dev"

// Node is one agentd process.
type Node struct {
	cfg config.Config
	log *slog.Logger

	// lock is held on DATA/LOCK from the first step of Start to the last
	// of Stop: one agentd per data dir.
	lock *dataLock
	root *trust.Root
	id   *trust.Identity
	// cred is the identity the node signs with now (id, or a renewal of
	// it: watchCredential).
	cred     atomic.Pointer[trust.Identity]
	embedded *embedded.Server
	conn     *bus.Conn
	outbox   *outbox.Outbox
	store    *ledger.Store
	follower *follow.Follower
	verifier *envelope.Verifier
	// revoked judges the signers of answers by the query group's
	// revocations on a node without a ledger (queries.go, apiClient).
	revoked struct {
		once sync.Once
		ask  *api.AskedRevocations
	}
	// disk watches the data dir's free space (node/disk.go).
	disk *diskspace.Monitor

	runs *runindex.Index // the run read model; nil on a node without a ledger
	orch *orchestrator.Orchestrator
	// tracer is UseTracer's, if any (node/tracing.go).
	tracer *tracing.Tracer
	// notifier sends the gates that open (notify.webhook, notify.exec).
	notifier *notify.Notifier
	// improve is the self-improvement loop (improve.go): on every ledger
	// node the proposals and the settings they change, on the leader
	// orchestrator the evaluation, apply, monitor and revert.
	improve *improve.Loop
	mem     *memory.Memory
	arts    *artifacts.Fold // artifactsquery.go
	exec    *executor.Executor
	roles   []roles.Role
	apiSrv  *api.Server
	// http serves the API (and the probes unless probe serves them).
	http  httpServer
	probe httpServer
	// dash is the ui role's dashboard on the HTTP listener (nil: none).
	dash *web.Server
	// debug serves the Go profiles when debug_listen is set.
	debug httpServer

	// settings keeps the cluster settings (nil on a node without a ledger).
	settings *settings.Cluster
	// nodes is the nodes read model (nil on a node without a ledger).
	nodes *nodes.Nodes
	// policies is the policy index (nil on a node without a ledger).
	policies *policies.Index
	// plugins is the plugin index (plugins.list, plugins.show).
	plugins *plugins.Index
	// gossip is the node's gossip membership (nil without gossip_listen).
	gossip *membership.Membership
	// health runs the node's readiness checks and raises its alarms.
	health *health.Monitor
	// leader is the leader lease as the leader check last read it (nil
	// on a node without a ledger).
	leader *leaderWatch
	// caughtUp is closed once the ledger has caught up with the stream.
	caughtUp chan struct{}
	// load counts the tasks assigned or running per node for nodes.list
	// (the orchestrator's view); nil: not known on this node.
	load func() map[string]int

	verifyCache verifyCache
	// integrity is the verdict on the ledger's integrity (alarm CORRUPT).
	integrity ledgerIntegrity
	// backupMu runs one backup at a time.
	backupMu sync.Mutex

	incarnation string
	fatal       chan error
	fatalOnce   sync.Once
	started     atomic.Bool // read by Ready from the API and HTTP handlers
	// cancel and wg end and wait for the node's own goroutines.
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New prepares a node from a validated configuration; it starts nothing.
func New(cfg config.Config, logger *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Node{
		cfg:         cfg,
		log:         logger.With("node", cfg.Name),
		incarnation: event.NewID(),
		fatal:       make(chan error, 1),
	}, nil
}

// Fatal delivers the error that forces the node to stop (a failed fsync in
// the ledger or the outbox). The caller must Stop and exit non-zero.
func (n *Node) Fatal() <-chan error { return n.fatal }

// Drained is closed once the node's executor has completed a node.drain
// naming the node (nothing runs, nothing more starts): the caller should
// Stop and exit 0. Nil — never ready — on a node without the executor role.
func (n *Node) Drained() <-chan struct{} {
	if n.exec == nil {
		return nil
	}
	return n.exec.Drained()
}

func (n *Node) fail(err error) {
	n.fatalOnce.Do(func() { n.fatal <- err })
}

func (n *Node) has(role string) bool { return slices.Contains(n.cfg.Roles, role) }

// needsLedger: every role but a lone executor folds the ledger.
func (n *Node) needsLedger() bool {
	for _, r := range n.cfg.Roles {
		if r != event.RoleExecutor {
			return true
		}
	}
	return false
}

// Info describes the running node (the startup banner and node.info).
func (n *Node) Info() api.NodeInfo {
	info := api.NodeInfo{ID: n.cfg.Name, Roles: n.cfg.Roles, Version: Version, NATS: n.NATSURL()}
	if n.root != nil {
		info.Root = n.root.KeyID()
	}
	info.Leader, info.Epoch, info.LeaderReason = n.liveLeader()
	info.Checks = n.Checks()
	if err := n.Ready(); err != nil {
		info.NotReady = err.Error()
	} else {
		info.Ready = true
	}
	if g := n.gossip; g != nil {
		info.Gossip = g.Addr()
		for _, m := range g.Members() {
			if m.State == membership.Alive || m.State == membership.Suspect {
				info.Members++
			}
		}
		if err := g.JoinError(); err != nil {
			info.GossipJoinError = err.Error()
		}
	}
	return info
}

// liveLeader is the orchestrator leader and its epoch as this node knows
// them: the holder of a live lease (the leader check's last reading), or
// none and why. Before the first reading, and on a node that reads no
// lease, the leader the ledger last recorded.
func (n *Node) liveLeader() (leader string, epoch uint64, reason string) {
	if n.leader != nil {
		if v, ok := n.leader.last(); ok {
			return v.leader, v.epoch, v.reason
		}
	}
	if n.runs != nil {
		leader, epoch = n.runs.Leader()
	}
	return leader, epoch, ""
}

// runReads is the node's answers to run queries (nil index: none).
func (n *Node) runReads() runReads {
	return runReads{x: n.runs}
}

// NATSURL is the URL clients use to reach this node's bus.
func (n *Node) NATSURL() string {
	if n.embedded != nil {
		if u := n.embedded.ClientURL(); u != "" {
			return u
		}
		return "embedded (in-process only)"
	}
	if n.conn != nil {
		return n.conn.NC.ConnectedUrlRedacted()
	}
	return ""
}

// HTTPAddr is the address the HTTP API listens on ("" if none).
func (n *Node) HTTPAddr() string { return n.http.addr() }

// Start brings the node up (see the package doc for the order). On error
// everything started so far is stopped again.
func (n *Node) Start(ctx context.Context) (err error) {
	if n.started.Load() {
		return nil
	}
	defer func() {
		if err != nil {
			n.teardown(context.Background())
		}
	}()
	if err := os.MkdirAll(n.cfg.Data, 0o700); err != nil {
		return fmt.Errorf("node: data dir %s: %w", n.cfg.Data, err)
	}
	if n.lock, err = lockDataDir(n.cfg.Data); err != nil {
		return err
	}
	if err := checkDataDir(n.cfg.Data); err != nil {
		return err
	}
	if err := n.startDisk(); err != nil {
		return err
	}
	n.root, n.id, err = trust.Bootstrap(n.cfg.Data, n.cfg.Name, n.cfg.Roles)
	if err != nil {
		return fmt.Errorf("node: trust: %w", err)
	}
	n.verifier = envelope.NewVerifier(n.root)
	if err := n.startBus(ctx); err != nil {
		return err
	}
	n.outbox, err = outbox.Open(filepath.Join(n.cfg.Data, "outbox"), n.id, n.log.With("component", "outbox"))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.outbox.Start(n.conn.JS)
	drain, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = n.outbox.WaitDrained(drain)
	cancel()
	if err != nil {
		return fmt.Errorf("node: republish unacknowledged events: %w", err)
	}
	if err := n.startGossip(ctx); err != nil {
		return err
	}
	if err := n.startLedger(ctx); err != nil {
		return err
	}
	for _, r := range n.roles {
		if err := r.Start(ctx); err != nil {
			return fmt.Errorf("node: start %s: %w", r.Name(), err)
		}
	}
	lctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if n.follower != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if n.follower.WaitLive(lctx) == nil {
				close(n.caughtUp)
			}
		}()
	}
	if err := n.startHealth(ctx); err != nil {
		return err
	}
	if err := n.startAPI(); err != nil {
		return err
	}
	if err := n.startHTTP(); err != nil {
		return err
	}
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		n.watchOutbox(lctx)
	}()
	go func() {
		defer n.wg.Done()
		n.watchCredential(lctx)
	}()
	if n.follower != nil {
		n.wg.Add(2)
		go func() {
			defer n.wg.Done()
			n.releaseAfterCatchUp(lctx)
		}()
		go func(st *ledger.Store) {
			defer n.wg.Done()
			n.watchIntegrity(lctx, st)
		}(n.store)
	}
	if n.gossip != nil && n.exec != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.announceDrain(lctx)
		}()
	}
	n.started.Store(true)
	return nil
}

// releaseAfterCatchUp returns the memory of the restore and catch-up to the
// OS once the ledger is live: folding a long tail allocates far more than
// the live state keeps, and the Go runtime would hand it back only slowly.
// The ledger's block cache is emptied first: the fold filled it with
// blocks of history that live work does not read again.
func (n *Node) releaseAfterCatchUp(ctx context.Context) {
	if n.follower.WaitLive(ctx) != nil {
		return
	}
	n.store.DropCache()
	debug.FreeOSMemory()
	// Once more when the work that follows a long catch-up is done (the
	// roles' and indexes' snapshots of it are written in the background):
	// an idle node collects garbage only every two minutes otherwise.
	t := time.NewTimer(releaseSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	// Then once the compactions the catch-up set off have settled (they
	// allocate and pool buffers of their own): no compaction for a second,
	// or releaseSettleMax.
	idle, deadline := 0, time.Now().Add(releaseSettleMax)
	for idle < 2 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		if n.store.Compacting() {
			idle = 0
		} else {
			idle++
		}
	}
	n.store.DropCache()
	// Twice: buffers pooled by Pebble's compactions (sync.Pool) go only at
	// the second collection.
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}

// releaseSettle is how long after catching up the node returns memory to
// the OS a second time, at the earliest; releaseSettleMax bounds the wait
// for the compactions to settle after it.
const (
	releaseSettle    = 15 * time.Second
	releaseSettleMax = 2 * time.Minute
)

func (n *Node) startBus(ctx context.Context) error {
	maxStore, err := n.cfg.JetStreamMaxStore()
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := natsauth.PrepareDataDir(n.cfg.Data, n.root, n.id); err != nil {
		return fmt.Errorf("node: NATS identity: %w", err)
	}
	var identity []nats.Option
	if n.cfg.NATSCreds == "" || len(n.cfg.NATS) == 0 {
		if identity, err = n.natsIdentity(); err != nil {
			return err
		}
	}
	if len(n.cfg.NATS) == 0 {
		auth, err := n.natsServerAuth()
		if err != nil {
			return err
		}
		n.embedded, err = embedded.Start(ctx, embedded.Config{
			Auth:          auth,
			StoreDir:      filepath.Join(n.cfg.Data, "nats"),
			Listen:        n.cfg.NATSListen,
			ServerName:    n.cfg.Name,
			ClusterListen: n.cfg.NATSClusterListen,
			Routes:        n.cfg.NATSRoutes,
			ClusterName:   n.cfg.NATSClusterName,
			Logger:        n.log.With("component", "nats"),
			MaxStore:      maxStore,
			Space:         n.disk.Refresh,
			TLS:           embedded.TLS{Cert: n.cfg.NATSTLSCert, Key: n.cfg.NATSTLSKey, CA: n.cfg.NATSTLSCA},
		})
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	cc := bus.ConnConfig{
		URLs: n.cfg.NATS, Name: "agentd " + n.cfg.Name,
		Logger: n.log.With("component", "bus"),
		Creds:  n.cfg.NATSCreds, Identity: identity,
	}
	if n.embedded != nil { // never a nil *embedded.Server in the interface
		cc.Server = n.embedded
	} else { // with the embedded server the TLS files are its own
		cc.TLS = bus.TLSConfig{CA: n.cfg.NATSTLSCA, Cert: n.cfg.NATSTLSCert, Key: n.cfg.NATSTLSKey}
	}
	n.conn, err = bus.Connect(ctx, cc)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	// A clustered embedded server waits for a majority of its cluster
	// before JetStream answers: give the other machines time to start.
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Absent streams are created with the default settings (replicas: 3 on
	// a NATS cluster, 1 on a lone server); existing ones are left alone.
	// Ledger nodes compare them with the recorded cluster settings once
	// live; an administrator applies those (node/settings).
	sc := bus.StreamConfig{Logger: n.log.With("component", "bus")}
	if n.embedded != nil {
		sc.StoreLimit = n.embedded.MaxStore()
	}
	if n.needsLedger() {
		// A deleted events stream comes back continuing the ledger
		// (eventsFirstSeq), asked once even if EnsureStreams retries.
		sc.EventsFirstSeq = sync.OnceValues(func() (uint64, error) { return n.eventsFirstSeq(sctx) })
	}
	if err := bus.EnsureStreams(sctx, n.conn.JS, sc); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

func (n *Node) roleEnv(role string) roles.Env {
	return roles.Env{Node: n.cfg.Name, Logger: n.log.With("role", role), Emit: n.outbox}
}

func (n *Node) startLedger(ctx context.Context) error {
	var folders []roles.Folder
	if n.needsLedger() {
		var err error
		n.store, err = n.openLedger(ctx)
		if err != nil {
			return err
		}
		if n.store == nil {
			// Damaged (n.integrity says how): no role that folds or
			// serves the ledger runs; an executor still works.
			return n.startExecutor()
		}
		// The run read model is written in the ledger's batches: attach
		// it before anything is appended.
		x := runindex.New(n.log.With("component", "runindex"))
		if err := x.Attach(n.store); err != nil {
			return fmt.Errorf("node: run index: %w", err)
		}
		n.runs = x
		n.policies = policies.New(n.log.With("component", "policies"))
		if err := n.policies.Attach(n.store); err != nil {
			return fmt.Errorf("node: policy index: %w", err)
		}
		n.plugins = plugins.New(n.log.With("component", "plugins"))
		if err := n.plugins.Attach(n.store); err != nil {
			return fmt.Errorf("node: plugin index: %w", err)
		}
		n.settings = settings.New(settings.Config{Node: n.cfg.Name, NC: n.conn.NC, Sign: n.identity, JS: n.conn.JS, Replicas: bus.DefaultReplicas(n.conn.NC), AppliedSeq: n.store.AppliedStreamSeq, Logger: n.log.With("component", "settings")})
		folders = append(folders, n.settings)
		n.nodes = nodes.New(n.log.With("component", "nodes"))
		folders = append(folders, n.nodes)
		n.roles = append(n.roles, n.settings)
		folders = append(folders, n.artifactFolder()) // artifactsquery.go
	}
	// The memory fold: the memory role's, and on an orchestrator the
	// facts its leader resolves steps' ${memory:…} references with
	// (memoryFolder, memoryref.go).
	facts := n.memoryFolder()
	if facts != nil {
		folders = append(folders, facts)
	}
	if n.has(event.RoleOrchestrator) {
		kv, err := n.conn.JS.KeyValue(ctx, bus.LeaderBucket)
		if err != nil {
			return fmt.Errorf("node: leader bucket: %w", err)
		}
		if n.cfg.Orchestrator.LeaseTTL != 0 {
			n.log.Warn("orchestrator.lease_ttl is deprecated and ignored: the lease TTL is a cluster setting",
				"lease_ttl", n.cfg.Orchestrator.LeaseTTL, "hint", "remove the key; change the TTL with agentctl cluster settings set --lease-ttl")
		}
		var view orchestrator.Membership // a nil *Membership must stay a nil interface
		if n.gossip != nil {
			view = n.gossip
		}
		// Every orchestrator times its lease by the cluster setting the
		// ledger folded (n.settings, folded before n.orch).
		tracer, err := n.newTracer(ctx) // tracing.go
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		n.orch = orchestrator.New(n.roleEnv(event.RoleOrchestrator), orchestrator.Config{KV: kv, Settings: n.settings, Incarnation: n.incarnation, Membership: view, Paused: n.diskPaused, Facts: facts, Tracer: tracer, Artifacts: n.arts})
		n.orch.UsePolicyFile(n.cfg.Policy) // the first policy it records; Start refuses a bad file
		n.load = n.orch.Load
		folders = append(folders, n.orch)
		n.roles = append(n.roles, n.orch)
		if n.notifier = n.newNotifier(); n.notifier != nil {
			folders = append(folders, n.notifier)
			n.roles = append(n.roles, n.notifier)
		}
	}
	if n.has(event.RolePlanner) {
		p := planner.New(n.roleEnv(event.RolePlanner), n.plannerConfig())
		folders = append(folders, p)
		n.roles = append(n.roles, p)
	}
	if n.mem != nil {
		n.roles = append(n.roles, n.mem)
	}
	if n.store != nil {
		n.improve = n.newImprove()
		folders = append(folders, n.improve)
		n.roles = append(n.roles, n.improve)
	}
	if err := n.startExecutor(); err != nil {
		return err
	}
	if n.store == nil {
		return nil
	}
	n.follower = follow.New(follow.Config{
		JS:       n.conn.JS,
		Store:    n.store,
		Verifier: n.verifier,
		Folders:  folders,
		Logger:   n.log.With("component", "follow"),
		OnFatal:  n.onLedgerFatal,
		Space:    n.disk,
	})
	if err := n.follower.Start(ctx); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.caughtUp = make(chan struct{})
	return nil
}

// startHealth starts the readiness checks (see docs/architecture.md,
// "Health and alarms"): the node's own, then the ones its components
// offer.
func (n *Node) startHealth(ctx context.Context) error {
	m, err := health.NewMonitor(health.Config{
		Node:       n.cfg.Name,
		Emitter:    n.outbox,
		AlarmsFile: filepath.Join(n.cfg.Data, alarmsFile),
		Logger:     n.log.With("component", "health"),
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	// The disk check first: a full disk is the cause the others' failures
	// (a ledger not caught up, an outbox not draining) would hide.
	checks := append(n.diskChecks(), jetStreamCheck(n.conn.NC, n.conn.JS), outboxCheck(n.outbox, n.conn.NC), n.credentialCheck())
	if n.follower != nil {
		kv, err := n.conn.JS.KeyValue(ctx, bus.LeaderBucket)
		if err != nil {
			return fmt.Errorf("node: leader bucket: %w", err)
		}
		n.leader = &leaderWatch{kv: kv, nc: n.conn.NC, ttl: n.settings.LeaseTTL}
		checks = append(checks,
			ledgerCheck(n.follower, n.caughtUp),
			clockCheck(n.cfg.Name, n.follower.Skews),
			leaderCheck(n.leader, n.has(event.RoleOrchestrator)))
		checks = append(checks, n.follower.Checks()...)
	}
	// The checks other components offer join here, before the first
	// probe (an alarm kept from before a restart that no check carries is
	// cleared at the first probe).
	if n.exec != nil {
		checks = append(checks, n.exec.Checks()...)
	}
	if n.settings != nil {
		checks = append(checks, n.settings.Checks()...)
	}
	if n.needsLedger() {
		checks = append(checks, n.IntegrityCheck())
	}
	if err := m.Register(checks...); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.health = m
	m.Start(ctx)
	return nil
}

// alarmsFile is the file in the data dir that keeps the alarms the node
// has raised and not cleared (internal/health).
const alarmsFile = "alarms.json"

// startExecutor prepares the executor role, on a node that has it.
func (n *Node) startExecutor() error {
	if !n.has(event.RoleExecutor) {
		return nil
	}
	work := n.cfg.WorkDir()
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fmt.Errorf("node: executor workdir: %w", err)
	}
	n.exec = executor.New(n.roleEnv(event.RoleExecutor), executor.Config{
		JS:           n.conn.JS,
		Verifier:     n.verifier,
		StateDir:     filepath.Join(n.cfg.Data, "executor"),
		Slots:        n.cfg.Executor.Slots,
		Queue:        n.cfg.ExecutorQueue(),
		Capabilities: n.cfg.Executor.Capabilities,
		Version:      Version,
		Runner:       runner.Options{DefaultTimeout: n.cfg.Executor.DefaultTimeout, DefaultCwd: work},
		Incarnation:  n.incarnation,
		OnFatal:      n.fail,
		Paused:       n.diskPaused,
		Safety:       executor.SafetyFrom(n.cfg.Executor, n.apiClient(0)),
		Plugins:      n.executorPlugins(),
		Git:          executor.GitFrom(n.cfg.Executor),
	})
	n.roles = append(n.roles, n.exec)
	return nil
}

// Ready reports whether the node can make progress: nil, or "starting",
// or the first blocking check that fails as "<check>: <reason>" (see
// Checks).
func (n *Node) Ready() error {
	if !n.started.Load() || n.health == nil {
		return errors.New("starting")
	}
	return n.health.Ready()
}

// Checks returns the last result of every readiness check (none before
// Start).
func (n *Node) Checks() []health.Status {
	if n.health == nil {
		return nil
	}
	return n.health.Statuses()
}

// watchOutbox turns an outbox failure into a fatal node error.
func (n *Node) watchOutbox(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.outbox.Err(); err != nil {
				n.fail(err)
				return
			}
		}
	}
}

// Config returns the node's configuration.
func (n *Node) Config() config.Config { return n.cfg }

// Stop drains and stops the node. Running steps may finish until ctx ends;
// then they are killed and reported as interrupted. Stop always finishes
// its cleanup.
func (n *Node) Stop(ctx context.Context) error {
	if !n.started.Swap(false) {
		return nil
	}
	n.teardown(ctx)
	return nil
}

func (n *Node) teardown(ctx context.Context) {
	if n.health != nil {
		n.health.Stop()
	}
	if n.cancel != nil {
		n.cancel()
		n.cancel = nil
	}
	n.stopHTTP(ctx)
	n.wg.Wait()
	if n.apiSrv != nil {
		n.apiSrv.Stop()
		n.apiSrv = nil
	}
	for i := len(n.roles) - 1; i >= 0; i-- {
		if err := n.roles[i].Stop(ctx); err != nil {
			n.log.Warn("stop role", "role", n.roles[i].Name(), "err", err)
		}
	}
	n.roles = nil
	if n.outbox != nil {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := n.outbox.WaitDrained(fctx); err != nil {
			n.log.Warn("events left in the outbox; they are published at next start", "err", err)
		}
		cancel()
		n.outbox.Stop()
	}
	if n.follower != nil {
		n.follower.Stop()
		n.follower = nil
	}
	if n.store != nil {
		if err := n.store.Close(); err != nil {
			n.log.Warn("close ledger", "err", err)
		}
		n.store = nil
	}
	if n.outbox != nil {
		if err := n.outbox.Close(); err != nil {
			n.log.Warn("close outbox", "err", err)
		}
		n.outbox = nil
	}
	n.stopGossip(ctx)
	n.stopDisk()
	if n.conn != nil {
		n.conn.Close()
		n.conn = nil
	}
	if n.embedded != nil {
		n.embedded.Shutdown()
		n.embedded = nil
	}
	if err := n.lock.release(); err != nil {
		n.log.Warn("release data dir lock", "err", err)
	}
	n.lock = nil
}
