package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Lease is the leader lease as the lease key (LeaseKey in the leader
// bucket) holds it: the node holding it, its process, and the epoch it
// won. It is for readers of the key (readiness, node.info); the lease
// loop alone writes it.
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
