package policy

import (
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrNotApplied marks a policy.applied that a fold of the ledger ignores:
// the version in force stays.
var ErrNotApplied = errors.New("policy: policy.applied not taken")

// Applied is the one rule by which every fold of the ledger (the
// orchestrator's, the policy index's) takes a policy.applied (an
// administrator's) or a policy.recorded (a leader's), of type t: given the
// version in force (0: the ledger holds no policy), it returns the policy
// the event makes in force, with its version set to d.Base+1, or an error
// wrapping ErrNotApplied that says why the event changes nothing:
//
//  1. t is neither type;
//  2. d.Base is not the version in force: two changes raced, and the one
//     folded second must be made again on the newer version;
//  3. a policy.recorded while the ledger holds a policy that is not the
//     narrow allow rule of an approval (Source remember): a leader records
//     its bootstrap policy only into an empty history;
//  4. d.Text does not load, or its hash is not d.Hash.
func Applied(current int64, t event.Type, d event.PolicyAppliedData) (*Policy, error) {
	if t != event.PolicyApplied && t != event.PolicyRecorded {
		return nil, fmt.Errorf("%w: %s is not a policy event", ErrNotApplied, t)
	}
	byOrchestrator := t == event.PolicyRecorded
	if d.Base != current {
		return nil, fmt.Errorf("%w: it replaces version %d, but version %d is in force", ErrNotApplied, d.Base, current)
	}
	if byOrchestrator && current > 0 && d.Source != event.PolicyFromRemember {
		return nil, fmt.Errorf("%w: a leader may record a policy (source %q) only while the ledger holds none, or a remembered approval's rule", ErrNotApplied, d.Source)
	}
	p, err := Parse([]byte(d.Text), "policy version "+fmt.Sprint(d.Base+1))
	if err != nil {
		return nil, fmt.Errorf("%w: its text does not load: %w", ErrNotApplied, err)
	}
	if p.Hash() != d.Hash {
		return nil, fmt.Errorf("%w: its text hashes to %s, not the %s it names", ErrNotApplied, p.Hash(), d.Hash)
	}
	return p.WithVersion(d.Base + 1), nil
}
