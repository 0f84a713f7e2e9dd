package membership

import gossip "github.com/agentic-dev/agentic/internal/member"

// State is where a member is, as this node sees it (internal/member).
type State = gossip.State

// Member states.
const (
	Alive   = gossip.Alive
	Suspect = gossip.Suspect
	Dead    = gossip.Dead
	Left    = gossip.Left
)

// Meta is what a node announces about itself in gossip.
type Meta = gossip.Meta

// Member is one node as this node's membership sees it.
type Member = gossip.Member
