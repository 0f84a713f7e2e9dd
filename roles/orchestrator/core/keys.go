package core

import "strconv"

// DecisionKind is what a decision does.
type DecisionKind string

// Decision kinds, one per decision event type.
const (
	KindAccept DecisionKind = "accept" // plan.accepted
	KindAssign DecisionKind = "assign" // task.assigned
	KindCancel DecisionKind = "cancel" // task.cancel
	KindFinish DecisionKind = "finish" // run.finished
	KindPolicy DecisionKind = "policy" // policy.applied
	KindGate   DecisionKind = "gate"   // gate.opened
	KindClose  DecisionKind = "close"  // gate.closed
	KindReplan DecisionKind = "replan" // plan.replan_requested

	KindNodeJoined  DecisionKind = "node.joined"  // node.joined
	KindNodeSuspect DecisionKind = "node.suspect" // node.suspect
	KindNodeFailed  DecisionKind = "node.failed"  // node.failed
	KindNodeLeft    DecisionKind = "node.left"    // node.left
)

// DecisionKey names what a decision does, not the event that carries it,
// so that a leader that emitted a decision and has not yet folded it back
// does not emit it again, and so that the event's id can be derived from
// it (DecisionID). It is comparable: the leader keeps the keys in flight in
// a map. Fields a kind does not use are zero:
//
//	accept: Run, Revision
//	assign: Run, Step, Attempt, Node, Revision (the run's Resumes),
//	        Policy (the version judged with)
//	cancel: Run, Step, Attempt
//	finish: Run
//	node.*: Node, Incarnation, Revision (the node record's Changes)
//	policy: Revision (the base version), Run and Step (a remembered rule)
//	gate:   Run, Step, Attempt, Revision (the step's gate number), Policy
//	close:  Run, Step, Revision (the gate's number)
//	replan: Run, Revision (the revision to replace)
//
// Every key names a one-way step of the state (a revision accepted, an
// attempt assigned or cancelled, a run finished, the n-th change of a
// node's membership), which the fold applies at most once: a second
// decision with the same key is ignored.
type DecisionKey struct {
	Kind     DecisionKind
	Run      string
	Step     string
	Attempt  int
	Revision int
	Node     string
	// Incarnation is the node's, for membership decisions.
	Incarnation string
	// Policy is the policy version an assignment or a gate was judged
	// with: a decision the fold refused because the policy changed is
	// made again, under another key.
	Policy int64
}

func acceptKey(run string, rev int) DecisionKey {
	return DecisionKey{Kind: KindAccept, Run: run, Revision: rev}
}

func assignKey(run, step string, attempt int, node string) DecisionKey {
	return DecisionKey{Kind: KindAssign, Run: run, Step: step, Attempt: attempt, Node: node}
}

func policyKey(base int64, run, step string) DecisionKey {
	return DecisionKey{Kind: KindPolicy, Revision: int(base), Run: run, Step: step}
}

func gateKey(run, step string, attempt, gate int, policy int64) DecisionKey {
	return DecisionKey{Kind: KindGate, Run: run, Step: step, Attempt: attempt, Revision: gate, Policy: policy}
}

func closeKey(run, step string, gate int) DecisionKey {
	return DecisionKey{Kind: KindClose, Run: run, Step: step, Revision: gate}
}

func cancelKey(run, step string, attempt int) DecisionKey {
	return DecisionKey{Kind: KindCancel, Run: run, Step: step, Attempt: attempt}
}

func finishKey(run string) DecisionKey { return DecisionKey{Kind: KindFinish, Run: run} }

func nodeKey(kind DecisionKind, node, incarnation string, changes int) DecisionKey {
	return DecisionKey{Kind: kind, Node: node, Incarnation: incarnation, Revision: changes}
}

// isNode reports whether the key is a membership decision.
func (k DecisionKey) isNode() bool {
	switch k.Kind {
	case KindNodeJoined, KindNodeSuspect, KindNodeFailed, KindNodeLeft:
		return true
	}
	return false
}

// String is the key for people and logs (never parsed back):
// accept/<run>/<revision>, assign/<run>/<step>/<attempt>/<node>,
// cancel/<run>/<step>/<attempt>, finish/<run>, replan/<run>/<revision>,
// node.<state>/<node>/<incarnation>/<changes>, policy/<base>[/<run>/<step>],
// gate/<run>/<step>/<attempt>/<gate>, close/<run>/<step>/<gate>.
func (k DecisionKey) String() string {
	if k.isNode() {
		return string(k.Kind) + "/" + k.Node + "/" + k.Incarnation + "/" + strconv.Itoa(k.Revision)
	}
	if k.Kind == KindPolicy {
		s := "policy/" + strconv.Itoa(k.Revision)
		if k.Run != "" {
			s += "/" + k.Run + "/" + k.Step
		}
		return s
	}
	s := string(k.Kind) + "/" + k.Run
	switch k.Kind {
	case KindGate:
		s += "/" + k.Step + "/" + strconv.Itoa(k.Attempt) + "/" + strconv.Itoa(k.Revision)
	case KindClose:
		s += "/" + k.Step + "/" + strconv.Itoa(k.Revision)
	case KindAccept, KindReplan:
		s += "/" + strconv.Itoa(k.Revision)
	case KindAssign:
		s += "/" + k.Step + "/" + strconv.Itoa(k.Attempt) + "/" + k.Node
	case KindCancel:
		s += "/" + k.Step + "/" + strconv.Itoa(k.Attempt)
	}
	return s
}

// attempt names the attempt an assign or cancel key is about.
func (k DecisionKey) attempt() attemptRef { return attemptRef{k.Run, k.Step, k.Attempt} }

// attemptRef names one attempt of one step.
type attemptRef struct {
	run, step string
	attempt   int
}
