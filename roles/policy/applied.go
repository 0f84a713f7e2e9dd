package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrNotApplied marks a policy.applied that a fold of the ledger ignores:
// the version in force stays.
var ErrNotApplied = errors.New("policy: policy.applied not taken")

// Applied is the one rule by which every fold of the ledger (the
// orchestrator's, the policy index's) takes a policy.applied: given the
// version in force (0: the ledger holds no policy) and whether the event's
// signer is an orchestrator (Signers), it returns the policy the event
// makes in force, with its version set to d.Base+1, or an error wrapping
// ErrNotApplied that says why the event changes nothing:
//
//  1. d.Base is not the version in force: two changes raced, and the one
//     folded second must be made again on the newer version;
//  2. an orchestrator signed it while the ledger holds a policy and it is
//     not the narrow allow rule of an approval (Source remember): a
//     leader records its bootstrap policy only into an empty history;
//  3. d.Text does not load, or its hash is not d.Hash.
func Applied(current int64, byOrchestrator bool, d event.PolicyAppliedData) (*Policy, error) {
	if d.Base != current {
		return nil, fmt.Errorf("%w: it replaces version %d, but version %d is in force", ErrNotApplied, d.Base, current)
	}
	if byOrchestrator && current > 0 && d.Source != event.PolicyFromRemember {
		return nil, fmt.Errorf("%w: an orchestrator may record a policy (source %q) only while the ledger holds none, or a remembered approval's rule", ErrNotApplied, d.Source)
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

// Signers tells, from the ledger alone, which signers are orchestrators:
// those that signed an event only orchestrators may emit (leader.elected,
// which a leader signs before any policy.applied of its own, plan.accepted,
// task.assigned…), which the ledger admitted only from a credential
// carrying that role; and the nodes a leader recorded joining with the
// orchestrator role (node.joined), which covers orchestrators that never
// led. A fold gives it every event (Fold) before it asks about a
// policy.applied (Orchestrator). The zero value is ready; it marshals to
// JSON for snapshots.
//
// It errs on the strict side: an operator id equal to an orchestrator
// node's id counts as the orchestrator's, and its policy.applied is then
// taken only into an empty history. An orchestrator that never led and
// never joined through gossip is not known: the ledger's records do not
// name their signer's credential kind.
type Signers struct {
	// Orchestrators are the signer ids known to be orchestrators, sorted.
	Orchestrators []string `json:"orchestrators,omitempty"`
}

// Fold learns from ev whether its signer is an orchestrator.
func (s *Signers) Fold(ev event.Event) {
	roles := event.AllowedRoles(ev.Type)
	if len(roles) != 1 || roles[0] != event.RoleOrchestrator {
		return
	}
	s.add(ev.Node)
	if ev.Type == event.NodeJoined {
		var d event.NodeData
		if ev.Decode(&d) == nil && slices.Contains(d.Roles, event.RoleOrchestrator) {
			s.add(d.Node)
		}
	}
}

func (s *Signers) add(id string) {
	if id == "" {
		return
	}
	if i, found := slices.BinarySearch(s.Orchestrators, id); !found {
		s.Orchestrators = slices.Insert(s.Orchestrators, i, id)
	}
}

// Orchestrator reports whether id signed an orchestrator's event before.
func (s *Signers) Orchestrator(id string) bool {
	_, found := slices.BinarySearch(s.Orchestrators, id)
	return found
}
