package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnConfig says where to connect: an embedded server (in-process) or the
// URLs of an external cluster, and with which credentials.
type ConnConfig struct {
	// Server, when set, connects in-process to this embedded server
	// (an *embedded.Server; an interface so that clients of external
	// servers, agentctl among them, do not link nats-server).
	Server nats.InProcessConnProvider
	// URLs of external servers (ignored when Server is set).
	URLs []string
	// Name is the client connection name (shown by nats-server).
	Name string
	// Logger hears about disconnections, reconnections and asynchronous
	// errors (nil: discarded).
	Logger *slog.Logger
	// Creds is a NATS user credentials file (JWT and nkey seed) for
	// external servers, used there instead of Identity.
	Creds string
	// Identity are the options that present the client's NATS user
	// (natsauth.ConnectOptions: user JWT, nonce signing, inbox prefix),
	// to the embedded server and to external ones alike.
	Identity []nats.Option
	// TLS configures TLS to external servers.
	TLS TLSConfig
}

// TLSConfig names the files of a TLS client: a CA bundle that verifies the
// servers, and a client certificate and key for servers that ask for one.
// Empty fields are not used; a tls:// URL or a server that requires TLS
// uses the system roots when CA is empty.
type TLSConfig struct {
	CA, Cert, Key string
}

// Reconnection: a lost connection is retried for ever. After every pass
// through the known servers the client waits ReconnectBackoff(attempt):
// 100 ms doubling to 2 s, with up to 20% jitter so that a cluster's clients
// do not all come back in the same instant. While disconnected, published
// messages are buffered up to ReconnectBuffer bytes (beyond that a publish
// fails at once and the outbox retries it). A server that stops answering
// without closing the connection is noticed after PingInterval ×
// MaxPingsOut.
const (
	ReconnectBuffer = 16 << 20
	PingInterval    = 5 * time.Second
	MaxPingsOut     = 3
	minReconnect    = 100 * time.Millisecond
	maxReconnect    = 2 * time.Second
)

// ReconnectBackoff is the pause after the attempt-th pass through the
// servers without a connection (attempt counts from 1).
func ReconnectBackoff(attempt int) time.Duration {
	d := maxReconnect
	if attempt < 16 {
		d = min(minReconnect<<max(attempt-1, 0), maxReconnect)
	}
	return d + rand.N(d/5+1)
}

// Conn is a NATS connection with its JetStream context.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
}

// Connect opens a connection that reconnects for ever (see
// ReconnectBackoff). The first connection to external servers is retried
// the same way until ctx ends, each failure logged: a node may start
// before its NATS servers.
func Connect(ctx context.Context, cfg ConnConfig) (*Conn, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The server the connection was on, for the disconnection's log line
	// (by then the connection no longer names it).
	var server atomic.Pointer[string]
	onServer := func(nc *nats.Conn) {
		name := nc.ConnectedServerName()
		server.Store(&name)
	}
	lastServer := func() string {
		if p := server.Load(); p != nil {
			return *p
		}
		return ""
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(ReconnectBackoff),
		nats.ReconnectBufSize(ReconnectBuffer),
		nats.PingInterval(PingInterval),
		nats.MaxPingsOutstanding(MaxPingsOut),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil {
				return // closed on purpose: the closed handler says so
			}
			logger.Warn("nats disconnected; reconnecting", "server", lastServer(), "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			onServer(nc)
			logger.Info("nats reconnected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName(), "reconnects", nc.Stats().Reconnects)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				logger.Error("nats connection closed", "err", err)
			} else {
				logger.Debug("nats connection closed")
			}
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			logger.Error("nats asynchronous error", "subject", subject, "err", err)
		}),
	}
	url := strings.Join(cfg.URLs, ",")
	if cfg.Creds == "" || cfg.Server != nil {
		opts = append(opts, cfg.Identity...)
	}
	if cfg.Server != nil {
		opts = append(opts, nats.InProcessServer(cfg.Server))
		url = ""
	} else {
		if url == "" {
			return nil, fmt.Errorf("bus: no NATS server to connect to")
		}
		sec, err := securityOptions(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sec...)
	}
	nc, err := dial(ctx, url, opts, logger)
	if err != nil {
		return nil, err
	}
	onServer(nc)
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Conn{NC: nc, JS: js}, nil
}

// securityOptions are the credentials and TLS options of cfg.
func securityOptions(cfg ConnConfig) ([]nats.Option, error) {
	var opts []nats.Option
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	t := cfg.TLS
	if (t.Cert == "") != (t.Key == "") {
		return nil, fmt.Errorf("bus: a TLS client certificate needs its key and a key its certificate (cert %q, key %q)", t.Cert, t.Key)
	}
	if t.CA != "" {
		opts = append(opts, nats.RootCAs(t.CA))
	}
	if t.Cert != "" {
		opts = append(opts, nats.ClientCert(t.Cert, t.Key))
	}
	return opts, nil
}

// dial connects, retrying with ReconnectBackoff until ctx ends when the
// servers cannot be reached. Errors that retrying cannot mend (a bad
// credentials file, refused authorization, a TLS misconfiguration) are
// returned at once.
func dial(ctx context.Context, url string, opts []nats.Option, logger *slog.Logger) (*nats.Conn, error) {
	for attempt := 1; ; attempt++ {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if !unreachable(err) {
			return nil, fmt.Errorf("bus: connect %s: %w", url, err)
		}
		wait := ReconnectBackoff(attempt)
		logger.Warn("cannot reach NATS; retrying", "url", url, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: connect %s: %w (gave up: %w)", url, err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// unreachable reports a connection error that waiting may mend: no server
// answered (refused, timed out, a name not resolved yet), as opposed to
// one that answered and refused us (authorization; TLS: a server that
// closes the connection after the handshake, as one does to a client
// without the certificate it wants, a server certificate we do not trust)
// or a file of ours that cannot be read (credentials, CA, certificate).
func unreachable(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
		pe  *fs.PathError
		cv  *tls.CertificateVerificationError
	)
	if errors.Is(err, nats.ErrTLS) || errors.As(err, &pe) || errors.As(err, &cv) {
		return false
	}
	return errors.Is(err, nats.ErrNoServers) || errors.As(err, &op) || errors.As(err, &dns)
}

// Close drains nothing and closes the connection.
func (c *Conn) Close() { c.NC.Close() }

// Clustered reports whether the server the connection is on belongs to a
// NATS cluster (it announces a cluster name).
func (c *Conn) Clustered() bool { return c.NC.ConnectedClusterName() != "" }
