package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaseHolder reads the leader lease from the leader bucket kv: the node
// holding it, the epoch it won, and how long ago it was last written
// (renewed), by this process's clock against the server's timestamp. No
// lease (never taken, released, expired, or the bucket emptied) is holder
// "" and no error; a value that does not decode is an error.
func LeaseHolder(ctx context.Context, kv jetstream.KeyValue) (holder string, epoch uint64, age time.Duration, err error) {
	e, err := kv.Get(ctx, LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0, 0, nil
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("orchestrator: read the leader lease: %w", err)
	}
	var v leaseValue
	if err := json.Unmarshal(e.Value(), &v); err != nil || v.Leader == "" {
		return "", 0, 0, fmt.Errorf("orchestrator: leader lease at revision %d holds %q, not a lease", e.Revision(), e.Value())
	}
	return v.Leader, v.Epoch, max(time.Since(e.Created()), 0), nil
}

// Lease is the leader lease as the lease key (LeaseKey in the leader
// bucket) holds it: the node holding it, its process, and the epoch it
// won. It is for readers of the key that follow its revisions themselves
// (the node's leader check); the lease loop alone writes it.
type Lease struct {
	Leader      string `json:"leader"`
	Incarnation string `json:"incarnation"`
	Epoch       uint64 `json:"epoch"`
}

// DecodeLease decodes the value of the lease key. A value that does not
// decode, or names no leader, is an error.
func DecodeLease(b []byte) (Lease, error) {
	var v leaseValue
	if err := json.Unmarshal(b, &v); err != nil {
		return Lease{}, fmt.Errorf("orchestrator: lease value does not decode: %w", err)
	}
	if v.Leader == "" {
		return Lease{}, errors.New("orchestrator: lease value names no leader")
	}
	return Lease(v), nil
}
