package nodetest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node"
)

// PeerConfig returns the configuration of one more node of a cluster: it
// is named name, runs roles, and uses the NATS server at url (another
// node's NATSURL, or a bustest server's ClientURL) instead of an embedded
// one. Its data directory, in t.TempDir(), is enrolled by root (which
// must hold its private key: trust.LoadRoot on a node's data dir) and
// holds operator credentials, so that Start can connect to it.
func PeerConfig(t testing.TB, url string, root *trust.Root, name string, roles ...string) config.Config {
	t.Helper()
	cfg := Config(t.TempDir())
	cfg.Name, cfg.Roles, cfg.NATS = name, roles, []string{url}
	if len(roles) == 0 {
		cfg.Roles = []string{event.RoleMemory}
	}
	if _, err := natsauth.Enroll(cfg.Data, root, name, cfg.Roles, time.Hour, false); err != nil {
		t.Fatalf("nodetest: enroll %s: %v", name, err)
	}
	op, err := trust.NewIdentity(root, "operator", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatalf("nodetest: operator identity: %v", err)
	}
	if err := natsauth.WriteOperatorCreds(filepath.Join(cfg.Data, trust.OperatorCredsFile), root, op); err != nil {
		t.Fatalf("nodetest: operator creds: %v", err)
	}
	return cfg
}

// StartLogged is Start with the node's logs going to logger.
func StartLogged(t testing.TB, cfg config.Config, logger *slog.Logger) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tn := &Node{Node: n, Dir: cfg.Data}
	t.Cleanup(func() { tn.Stop(t) })
	tn.connect(t)
	return tn
}

// NewRoot creates a cluster root in the data directory dir (natsauth.InitRoot:
// root.key, root.pub, operator.creds, the NATS bundle) before a node
// starts there, so that a test can start a NATS server that trusts the
// root first (bustest.SecureServer) and enroll peers from it.
func NewRoot(t testing.TB, dir string) *trust.Root {
	t.Helper()
	root, err := natsauth.InitRoot(dir)
	if err != nil {
		t.Fatalf("nodetest: root in %s: %v", dir, err)
	}
	return root
}
