package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config configures an in-process nats-server with JetStream.
type Config struct {
	// StoreDir is the JetStream store directory (DATA/nats).
	StoreDir string
	// Listen is the client address, host:port. Port 0 picks a free port;
	// "" means no TCP listener at all (in-process clients only).
	Listen string
	// ServerName names the server (defaults to a generated one). A
	// clustered server needs one, distinct in its cluster: agentd gives
	// its node name.
	ServerName string
	// ClusterListen is the cluster (route) address, host:port, where the
	// other servers of the cluster connect; port 0 picks a free port. ""
	// means the server is not clustered (and Routes must be empty).
	ClusterListen string
	// Routes are the other servers' cluster URLs (nats://host:port); a
	// server's own URL may be listed too (one list for every server).
	Routes []string
	// ClusterName names the cluster, the same on every server of it
	// (required with ClusterListen).
	ClusterName string
	// Logger receives the server's log lines (nil: discarded).
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the server to accept connections.
	ReadyTimeout time.Duration
	// MaxStore is the JetStream store's byte limit; 0 sizes it from the
	// store directory's file system (StoreShare of its size, see
	// MaxStoreFor).
	MaxStore int64
	// Space, if set, reads now whether the data dir is above its
	// free-space floor (internal/diskspace.Monitor.Refresh: a fresh reading, so
	// that JetStream is not restarted on a disk that just filled); JetStream
	// stopped by a full disk is restarted only then. Nil: when at least a
	// MiB is free.
	Space func() error
	// TLS, when its Cert is set, makes the server serve TLS to its
	// clients and on its cluster routes (see TLS). In-process
	// connections need none.
	TLS TLS
	// HealEvery is how often a JetStream stopped by a full disk is
	// checked for a restart (DefaultHealEvery if 0).
	HealEvery time.Duration
	// Auth, when set, configures who may connect (agentd: the cluster's
	// NATS operator, OperatorOptions); nil leaves the server open
	// to anonymous clients, which only tests of the bus itself do.
	Auth func(*server.Options) error
}

// TLS names the PEM files of the embedded server's TLS: the
// certificate and key it serves (both or neither), and a CA bundle that,
// when set, verifies the clients' certificates (a client must then present
// one) and the other servers' route certificates. Route connections
// present the same certificate, so it must be valid for both server and
// client authentication when a CA verifies routes; without a CA the other
// servers are verified against the system roots.
type TLS struct {
	Cert, Key, CA string
}

// tlsTimeout is the TLS handshake's time limit, in seconds (nats-server's
// default of half a second is short for a loaded machine).
const tlsTimeout = 2

// tlsOptions sets the TLS part of opts from t: nothing without a
// certificate.
func tlsOptions(opts *server.Options, t TLS) error {
	if t.Cert == "" && t.Key == "" {
		if t.CA != "" {
			return fmt.Errorf("embedded nats-server: a client CA (%s) needs the server's certificate and key (--nats-tls-cert, --nats-tls-key)", t.CA)
		}
		return nil
	}
	if t.Cert == "" || t.Key == "" {
		return fmt.Errorf("embedded nats-server: TLS needs a certificate and its key (cert %q, key %q)", t.Cert, t.Key)
	}
	verify := t.CA != ""
	clients, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: verify, Timeout: tlsTimeout})
	if err != nil {
		return fmt.Errorf("embedded nats-server TLS: %w", err)
	}
	opts.TLSConfig, opts.TLS, opts.TLSVerify, opts.TLSTimeout = clients, true, verify, tlsTimeout
	if opts.Cluster.Port == 0 && opts.Cluster.Host == "" {
		return nil
	}
	// Routes are both server (verifying the peers that dial in with the
	// CA) and client (verifying the server dialled with the same CA).
	routes, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: verify, Timeout: tlsTimeout})
	if err != nil {
		return fmt.Errorf("embedded nats-server route TLS: %w", err)
	}
	routes.RootCAs = routes.ClientCAs
	opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = routes, tlsTimeout
	return nil
}

// StoreShare is the part of its file system the embedded JetStream store
// may fill, in percent of the file system's size: the rest is for the
// ledger (which keeps every event), the outbox and the executor's state.
// It is a share of the size, not of the free space (nats-server's own
// default is 75 % of the space free at start), so that it does not shrink
// when the disk fills and the streams load again after a restart.
const StoreShare = 50

// DefaultHealEvery is how often a JetStream stopped by a full disk is
// checked for a restart.
const DefaultHealEvery = time.Second

// MaxStoreFor is the default JetStream store limit on a file system of
// total bytes: StoreShare percent of it.
func MaxStoreFor(total uint64) int64 {
	return int64(total / 100 * StoreShare)
}

// Server is a running in-process nats-server.
type Server struct {
	srv  *server.Server
	opts *server.Options
	cfg  Config
	log  *slog.Logger
	// broken is the write error that stopped JetStream's writes (a full
	// disk), until the restart that heals it.
	mu     sync.Mutex
	broken error
	heal   chan struct{} // a write error was seen
	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts a nats-server with JetStream persisting under
// cfg.StoreDir with sync_interval: always, and waits until it accepts
// connections. With cfg.ClusterListen it is one server of a JetStream
// cluster: it routes to cfg.Routes, and JetStream becomes available once a
// majority of the cluster's servers are up and have elected a meta leader
// (EnsureStreams waits for that).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	maxStore := cfg.MaxStore
	if maxStore <= 0 {
		if err := os.MkdirAll(cfg.StoreDir, 0o700); err != nil {
			return nil, fmt.Errorf("embedded nats-server store %s: %w", cfg.StoreDir, err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(cfg.StoreDir, &st); err != nil {
			return nil, fmt.Errorf("embedded nats-server store %s: %w", cfg.StoreDir, err)
		}
		maxStore = MaxStoreFor(uint64(st.Blocks) * uint64(st.Bsize))
	}
	opts := &server.Options{
		ServerName: cfg.ServerName,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		SyncAlways: true,
		NoSigs:     true,
		MaxPayload: 1 << 20,
		// A client's CONNECT carries its user JWT, whose permissions name
		// every subject it may use: room for them, with or without auth
		// (natsauth.MaxControlLine, which the Auth hook also sets).
		MaxControlLine: 16 << 10,
		// Both limits explicit: a restart of JetStream after a full disk
		// must not size the store from the space then free.
		JetStreamMaxStore:  maxStore,
		JetStreamMaxMemory: jetStreamMaxMemory,
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := listenAddr(cfg.Listen, "--nats-listen")
		if err != nil {
			return nil, err
		}
		opts.Host, opts.Port = host, port
	}
	if err := clusterOptions(opts, cfg); err != nil {
		return nil, err
	}
	if err := tlsOptions(opts, cfg.TLS); err != nil {
		return nil, err
	}
	if cfg.Auth != nil {
		if err := cfg.Auth(opts); err != nil {
			return nil, fmt.Errorf("embedded nats-server: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Server{srv: srv, opts: opts, cfg: cfg, log: log, heal: make(chan struct{}, 1)}
	srv.SetLoggerV2(&natsLogger{l: log, onWriteErr: e.writeFailed}, false, false, false)
	go srv.Start()
	timeout := cfg.ReadyTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if !srv.ReadyForConnections(timeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats-server not ready after %s (is %s already in use?)", timeout, cfg.Listen)
	}
	hctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go e.healLoop(hctx)
	return e, nil
}

// jetStreamMaxMemory bounds JetStream's memory storage: agentic keeps no
// stream in memory, so a little is enough.
const jetStreamMaxMemory = 64 << 20

// writeFailed records a JetStream write error reported in the server's
// log: a full disk leaves the stream's file store failed (every later
// write returns the same error) or JetStream disabled until it is
// restarted.
func (e *Server) writeFailed(msg string) {
	e.mu.Lock()
	first := e.broken == nil
	if first {
		e.broken = errors.New(msg)
	}
	e.mu.Unlock()
	if first {
		e.log.Error("JetStream stopped writing (disk full?): it is restarted in-process once the data dir has space again", "nats", msg)
	}
	select {
	case e.heal <- struct{}{}:
	default:
	}
}

// JetStreamErr returns why JetStream does not write (a full disk stopped
// it; it restarts by itself once space returns), or nil.
func (e *Server) JetStreamErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broken != nil {
		return fmt.Errorf("jetstream: stopped writing (%w); restarted once the data dir has space again", e.broken)
	}
	return nil
}

// healLoop restarts JetStream in-process after a write error, once the
// disk has space again: nats-server keeps a stream's file store failed
// after a write error and disables JetStream on some (clustered) ones,
// and only a restart of JetStream (as a configuration reload does) loads
// the streams again from what is on disk.
func (e *Server) healLoop(ctx context.Context) {
	defer close(e.done)
	every := e.cfg.HealEvery
	if every <= 0 {
		every = DefaultHealEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.heal:
		case <-t.C:
		}
		e.mu.Lock()
		if e.broken == nil && !e.srv.JetStreamEnabled() {
			// Disabled by the server itself (out of space on a clustered
			// server, in a goroutine of its own), or after a restart of
			// ours that such a goroutine undid.
			e.broken = errors.New("JetStream disabled by the server")
		}
		broken := e.broken
		e.mu.Unlock()
		if broken == nil || !e.hasSpace() {
			continue
		}
		if err := e.restartJetStream(); err != nil {
			e.log.Warn("JetStream restart after a full disk failed; retrying", "err", err)
			continue
		}
		e.mu.Lock()
		e.broken = nil
		e.mu.Unlock()
		e.log.Info("JetStream restarted after a full disk: writing again")
	}
}

// minHealFree is the free space wanted before JetStream is restarted when
// no Space is configured.
const minHealFree = 1 << 20

func (e *Server) hasSpace() bool {
	if e.cfg.Space != nil {
		return e.cfg.Space() == nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(e.cfg.StoreDir, &st); err != nil {
		return false
	}
	return uint64(st.Bavail)*uint64(st.Bsize) >= minHealFree
}

// restartJetStream shuts JetStream down, keeping its state on disk, and
// enables it again with the server's configuration (what nats-server's
// configuration reload does to re-enable JetStream).
func (e *Server) restartJetStream() error {
	if e.srv.JetStreamEnabled() {
		if err := e.srv.ShutdownJetStream(); err != nil {
			return fmt.Errorf("embedded: shut JetStream down: %w", err)
		}
	}
	o := e.opts
	err := e.srv.EnableJetStream(&server.JetStreamConfig{
		StoreDir:     o.StoreDir,
		SyncInterval: o.SyncInterval,
		SyncAlways:   o.SyncAlways,
		MaxMemory:    o.JetStreamMaxMemory,
		MaxStore:     o.JetStreamMaxStore,
		Domain:       o.JetStreamDomain,
		Strict:       !o.NoJetStreamStrict,
	})
	if err != nil {
		return fmt.Errorf("embedded: enable JetStream: %w", err)
	}
	return nil
}

// listenAddr splits a listen address into host and port for nats-server:
// port 0 becomes nats-server's random port. A fixed port is tried first,
// because nats-server only logs a failed listen and then never becomes
// ready: the error comes at once, with the address and the flag to change.
func listenAddr(addr, flag string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("embedded nats-server address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, fmt.Errorf("embedded nats-server port %q: %w", port, err)
	}
	if p == 0 {
		return host, server.RANDOM_PORT, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", 0, fmt.Errorf("embedded nats-server cannot listen on %s (another agentd or nats-server? choose another with %s): %w", addr, flag, err)
	}
	ln.Close()
	return host, p, nil
}

// clusterOptions sets the cluster part of opts from cfg: nothing when
// cfg.ClusterListen is empty. JetStream in a cluster needs a server name
// and a cluster name; both are checked here, so the error names the
// setting rather than coming from nats-server's log.
func clusterOptions(opts *server.Options, cfg Config) error {
	if cfg.ClusterListen == "" {
		if len(cfg.Routes) > 0 {
			return fmt.Errorf("embedded nats-server: routes %v need a cluster listen address (--nats-cluster-listen)", cfg.Routes)
		}
		return nil
	}
	if cfg.ServerName == "" {
		return fmt.Errorf("embedded nats-server: a clustered server needs a server name (the node name)")
	}
	if cfg.ClusterName == "" {
		return fmt.Errorf("embedded nats-server: a clustered server needs a cluster name (--nats-cluster-name)")
	}
	host, port, err := listenAddr(cfg.ClusterListen, "--nats-cluster-listen")
	if err != nil {
		return err
	}
	opts.Cluster.Name, opts.Cluster.Host, opts.Cluster.Port = cfg.ClusterName, host, port
	for _, r := range cfg.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("embedded nats-server: route %q: want nats://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// MaxStore is the JetStream store's byte limit (Config.MaxStore,
// or as sized from the file system).
func (e *Server) MaxStore() int64 { return e.opts.JetStreamMaxStore }

// NATS returns the nats-server itself (tests read its routes and health).
func (e *Server) NATS() *server.Server { return e.srv }

// InProcessConn opens an in-process connection to the server: what
// bus.ConnConfig.Server asks for (nats.InProcessConnProvider).
func (e *Server) InProcessConn() (net.Conn, error) {
	if e == nil {
		return nil, errors.New("embedded: no server to connect to in-process")
	}
	return e.srv.InProcessConn()
}

// ClientURL is the URL clients on other processes use ("" without a TCP
// listener).
func (e *Server) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// ClusterURL is the URL other servers route to (nats://host:port); ""
// when the server is not clustered.
func (e *Server) ClusterURL() string {
	addr := e.srv.ClusterAddr()
	if addr == nil {
		return ""
	}
	return "nats://" + addr.String()
}

// Name is the server's name (in a cluster, the node name).
func (e *Server) Name() string { return e.srv.Name() }

// Shutdown stops the server and waits for it to finish.
func (e *Server) Shutdown() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
		e.cancel = nil
	}
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// natsLogger adapts slog to nats-server's logger interface, and hands the
// lines that report a JetStream write failure (a full disk) to
// onWriteErr: nats-server reports them only in its log.
type natsLogger struct {
	l          *slog.Logger
	onWriteErr func(msg string)
}

// writeFailures are the log lines with which nats-server reports that a
// write error stopped a stream's store or JetStream itself.
var writeFailures = []string{"critical write error", "out of space", "will be DISABLED", "no space left on device", "out of resources"}

func (n *natsLogger) watch(msg string) {
	if n.onWriteErr == nil {
		return
	}
	for _, w := range writeFailures {
		if strings.Contains(msg, w) {
			n.onWriteErr(msg)
			return
		}
	}
}

func (n *natsLogger) Noticef(f string, v ...any) { n.l.Info("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Warnf(f string, v ...any) {
	msg := fmt.Sprintf(f, v...)
	n.l.Warn("nats", "msg", msg)
	n.watch(msg)
}
func (n *natsLogger) Fatalf(f string, v ...any) { n.l.Error("nats fatal", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Errorf(f string, v ...any) {
	msg := fmt.Sprintf(f, v...)
	n.l.Error("nats", "msg", msg)
	n.watch(msg)
}
func (n *natsLogger) Debugf(f string, v ...any) { n.l.Debug("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Tracef(f string, v ...any) { n.l.Debug("nats", "msg", fmt.Sprintf(f, v...)) }

// AdoptGlobalStore moves the streams a server without accounts kept in
// its JetStream store under storeDir (nats-server's global account, $G)
// to account: the streams of a data dir written before NATS required
// credentials, kept with their sequences. Nothing to move is no error; a
// store that holds both is refused.
func AdoptGlobalStore(store, account string) error {
	js := filepath.Join(store, "jetstream")
	global, mine := filepath.Join(js, server.DEFAULT_GLOBAL_ACCOUNT), filepath.Join(js, account)
	if _, err := os.Stat(global); err != nil {
		return nil
	}
	if _, err := os.Stat(mine); err == nil {
		return fmt.Errorf("embedded: %s holds streams of no account and of account %s: move one of them aside", js, account)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded: %w", err)
	}
	if err := os.Rename(global, mine); err != nil {
		return fmt.Errorf("embedded: move the streams of %s to account %s: %w", global, account, err)
	}
	return nil
}
