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
