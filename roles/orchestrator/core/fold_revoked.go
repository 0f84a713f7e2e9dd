package core

import "github.com/agentic-dev/agentic/bus/event"

// NodeRevoked is an executor's Gone once an administrator revoked its
// node's credential (credential.revoked): the ledger refuses what it signs
// from then on — its starts and results included — so what it holds is
// given up like a lost node's, and its gossip cannot bring it back. The
// node enrolled again announces a new incarnation, a new executor.
const NodeRevoked NodeState = "revoked"

// foldCredentialRevoked records that a node's credential was revoked: its
// executor, announced before the revocation, is gone (NodeRevoked), and
// Decide gives up its attempts — reassigned elsewhere, or held in
// needs-decision when they may have run and are not idempotent.
func foldCredentialRevoked(s *State, ev event.Event) {
	var d event.CredentialRevokedData
	if !s.decode(ev, &d) {
		return
	}
	ex := s.Executors[d.ID]
	if d.Kind != "node" || ex == nil || ex.Gone == NodeRevoked || ex.Since.After(ev.Time) {
		s.Ignored++
		return
	}
	ex.Gone = NodeRevoked
	s.loseWorktrees(d.ID, "node "+d.ID+", which holds the run's git worktree, was revoked") // git.go
	s.executorsChanged(d.ID)
}
