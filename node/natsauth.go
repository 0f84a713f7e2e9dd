package node

import (
	"fmt"
	"path/filepath"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// enrollHint is how a node without a (valid) NATS user gets one.
const enrollHint = "issue its files again where root.key is: agentctl node enroll NAME --roles ROLES --root ROOT_DIR --out DATA --force"

// natsIdentity is how the node presents itself to NATS: its user JWT
// (DATA/node.nats.jwt, read at every connection, so that a renewed one is
// used) with the key derived from node.key, and its inbox prefix.
func (n *Node) natsIdentity() ([]nats.Option, error) {
	opts, err := natsauth.NodeConnectOptions(n.cfg.Data, n.id)
	if err != nil {
		return nil, fmt.Errorf("node: NATS identity: %w (%s)", err, enrollHint)
	}
	return opts, nil
}

// natsServerAuth puts the embedded server in operator mode: it trusts the
// bundle in the data dir (DATA/nats-bundle.json: the cluster's NATS
// operator and accounts, derived from its root) and keeps account JWTs —
// revocations pushed since included — in DATA/nats/jwt. Anonymous clients
// are refused, on loopback too. A JetStream store of a version that ran
// without accounts is moved to the cluster's account first.
func (n *Node) natsServerAuth() (func(*server.Options) error, error) {
	b, err := natsauth.LoadBundle(n.cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("node: embedded NATS: %w (%s)", err, enrollHint)
	}
	v, err := b.Verify("")
	if err != nil {
		return nil, fmt.Errorf("node: embedded NATS: %w", err)
	}
	store := filepath.Join(n.cfg.Data, "nats")
	if err := embedded.AdoptGlobalStore(store, v.Account.Subject); err != nil {
		return nil, fmt.Errorf("node: embedded NATS: %w", err)
	}
	return func(o *server.Options) error {
		return embedded.OperatorOptions(o, b, filepath.Join(store, "jwt"))
	}, nil
}
