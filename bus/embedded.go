package bus

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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
	// ServerName names the server (defaults to a generated one).
	ServerName string
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
// connections.
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
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("bus: embedded listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("bus: embedded listen port %q: %w", port, err)
		}
		if p == 0 {
			p = server.RANDOM_PORT
		} else {
			// nats-server only logs a failed listen and then never becomes
			// ready; find out at once, with the address in the error.
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return nil, fmt.Errorf("bus: embedded nats-server cannot listen on %s (another agentd or nats-server? choose another with --nats-listen): %w", cfg.Listen, err)
			}
			ln.Close()
		}
		opts.Host, opts.Port = host, p
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
