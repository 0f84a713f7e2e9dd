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
// orchestrator's, the policy index's) takes a policy event ev: a
// policy.applied (an administrator's) or a policy.recorded (a leader's).
// Given the version in force (0: the ledger holds no policy), it returns
// the policy the event makes in force, with its version set to Base+1, and
// the payload; or an error wrapping ErrNotApplied that says why the event
// changes nothing:
//
//  1. ev is neither type, or its payload does not decode;
//  2. Base is not the version in force: two changes raced, and the one
//     folded second must be made again on the newer version;
//  3. a policy.recorded that is neither a bootstrap into an empty history
//     nor a remembered approval's rule naming its run and step on a held
//     policy, nor an approved proposal's policy naming the proposal
//     (docs/improve.md): a leader records its own policy only while the
//     ledger holds none, and adds only what operators asked;
//  4. Text does not load, or its hash is not Hash.
//
// It needs nothing but the versions folded before, so every reader of the
// ledger agrees on them.
func Applied(current int64, ev event.Event) (*Policy, event.PolicyAppliedData, error) {
	var d event.PolicyAppliedData
	if ev.Type != event.PolicyApplied && ev.Type != event.PolicyRecorded {
		return nil, d, fmt.Errorf("%w: %s is not a policy event", ErrNotApplied, ev.Type)
	}
	if err := ev.Decode(&d); err != nil {
		return nil, d, fmt.Errorf("%w: %w", ErrNotApplied, err)
	}
	if d.Base != current {
		return nil, d, fmt.Errorf("%w: it replaces version %d, but version %d is in force", ErrNotApplied, d.Base, current)
	}
	if ev.Type == event.PolicyRecorded {
		bootstrap := d.Source == event.PolicyFromBootstrap && current == 0
		remember := d.Source == event.PolicyFromRemember && current > 0 && ev.Run != "" && d.Step != ""
		proposal := d.Source == event.PolicyFromProposal && current > 0 && d.Proposal != ""
		if !bootstrap && !remember && !proposal {
			return nil, d, fmt.Errorf("%w: a leader records a policy (source %q) only while the ledger holds none, a remembered approval's rule naming its run and step, or an approved proposal's policy naming the proposal", ErrNotApplied, d.Source)
		}
	}
	p, err := Parse([]byte(d.Text), "policy version "+fmt.Sprint(d.Base+1))
	if err != nil {
		return nil, d, fmt.Errorf("%w: its text does not load: %w", ErrNotApplied, err)
	}
	if p.Hash() != d.Hash {
		return nil, d, fmt.Errorf("%w: its text hashes to %s, not the %s it names", ErrNotApplied, p.Hash(), d.Hash)
	}
	return p.WithVersion(d.Base + 1), d, nil
}
