package bus

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnConfig says where to connect: an embedded server (in-process) or the
// URLs of an external cluster.
type ConnConfig struct {
	// Server, when set, connects in-process to this embedded server.
	Server *Embedded
	// URLs of external servers (ignored when Server is set).
	URLs []string
	// Name is the client connection name (shown by nats-server).
	Name string
}

// Conn is a NATS connection with its JetStream context.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
}

// Connect opens a connection that reconnects forever.
func Connect(ctx context.Context, cfg ConnConfig) (*Conn, error) {
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	url := strings.Join(cfg.URLs, ",")
	if cfg.Server != nil {
		opts = append(opts, nats.InProcessServer(cfg.Server.srv))
		url = ""
	} else if url == "" {
		return nil, fmt.Errorf("bus: no NATS server to connect to")
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Conn{NC: nc, JS: js}, nil
}

// Close drains nothing and closes the connection.
func (c *Conn) Close() { c.NC.Close() }
