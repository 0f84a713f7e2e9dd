package bus

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedConfig configures an in-process nats-server with JetStream.
type EmbeddedConfig struct {
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
}

// Embedded is a running in-process nats-server.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a nats-server with JetStream persisting under
// cfg.StoreDir with sync_interval: always, and waits until it accepts
// connections. With cfg.ClusterListen it is one server of a JetStream
// cluster: it routes to cfg.Routes, and JetStream becomes available once a
// majority of the cluster's servers are up and have elected a meta leader
// (EnsureStreams waits for that).
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	opts := &server.Options{
		ServerName: cfg.ServerName,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		SyncAlways: true,
		NoSigs:     true,
		MaxPayload: 1 << 20,
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
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded nats-server: %w", err)
	}
	if cfg.Logger != nil {
		srv.SetLoggerV2(&natsLogger{l: cfg.Logger}, false, false, false)
	}
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
		return nil, fmt.Errorf("bus: embedded nats-server not ready after %s (is %s already in use?)", timeout, cfg.Listen)
	}
	return &Embedded{srv: srv}, nil
}

// listenAddr splits a listen address into host and port for nats-server:
// port 0 becomes nats-server's random port. A fixed port is tried first,
// because nats-server only logs a failed listen and then never becomes
// ready: the error comes at once, with the address and the flag to change.
func listenAddr(addr, flag string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bus: embedded nats-server address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, fmt.Errorf("bus: embedded nats-server port %q: %w", port, err)
	}
	if p == 0 {
		return host, server.RANDOM_PORT, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", 0, fmt.Errorf("bus: embedded nats-server cannot listen on %s (another agentd or nats-server? choose another with %s): %w", addr, flag, err)
	}
	ln.Close()
	return host, p, nil
}

// clusterOptions sets the cluster part of opts from cfg: nothing when
// cfg.ClusterListen is empty. JetStream in a cluster needs a server name
// and a cluster name; both are checked here, so the error names the
// setting rather than coming from nats-server's log.
func clusterOptions(opts *server.Options, cfg EmbeddedConfig) error {
	if cfg.ClusterListen == "" {
		if len(cfg.Routes) > 0 {
			return fmt.Errorf("bus: embedded nats-server: routes %v need a cluster listen address (--nats-cluster-listen)", cfg.Routes)
		}
		return nil
	}
	if cfg.ServerName == "" {
		return fmt.Errorf("bus: embedded nats-server: a clustered server needs a server name (the node name)")
	}
	if cfg.ClusterName == "" {
		return fmt.Errorf("bus: embedded nats-server: a clustered server needs a cluster name (--nats-cluster-name)")
	}
	host, port, err := listenAddr(cfg.ClusterListen, "--nats-cluster-listen")
	if err != nil {
		return err
	}
	opts.Cluster.Name, opts.Cluster.Host, opts.Cluster.Port = cfg.ClusterName, host, port
	for _, r := range cfg.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("bus: embedded nats-server: route %q: want nats://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// Server returns the nats-server, for in-process connections.
func (e *Embedded) Server() *server.Server { return e.srv }

// ClientURL is the URL clients on other processes use ("" without a TCP
// listener).
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// ClusterURL is the URL other servers route to (nats://host:port); ""
// when the server is not clustered.
func (e *Embedded) ClusterURL() string {
	addr := e.srv.ClusterAddr()
	if addr == nil {
		return ""
	}
	return "nats://" + addr.String()
}

// Name is the server's name (in a cluster, the node name).
func (e *Embedded) Name() string { return e.srv.Name() }

// Shutdown stops the server and waits for it to finish.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// natsLogger adapts slog to nats-server's logger interface.
type natsLogger struct{ l *slog.Logger }

func (n *natsLogger) Noticef(f string, v ...any) { n.l.Info("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Warnf(f string, v ...any)   { n.l.Warn("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Fatalf(f string, v ...any)  { n.l.Error("nats fatal", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Errorf(f string, v ...any)  { n.l.Error("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Debugf(f string, v ...any)  { n.l.Debug("nats", "msg", fmt.Sprintf(f, v...)) }
func (n *natsLogger) Tracef(f string, v ...any)  { n.l.Debug("nats", "msg", fmt.Sprintf(f, v...)) }
