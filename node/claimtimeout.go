package node

import (
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/roles/planner"
)

// claimSettings is what the node's planner times its no_planner
// rejections by: the claim timeout the ledger's cluster settings hold
// (n.settings, folded before the planner), the one the orchestrators
// decide by. planner.claim_timeout in the configuration file is
// deprecated: a value other than the default is logged and ignored (with
// no claim timeout in the ledger, the protocol's default applies).
func (n *Node) claimSettings() planner.ClaimSettings {
	if pc := n.cfg.Planner.ClaimTimeout; pc != 0 && pc != config.DefaultClaimTimeout {
		n.log.Warn("planner.claim_timeout is deprecated and ignored: the claim timeout is a cluster setting",
			"claim_timeout", pc, "hint", "remove the key; change the timeout with agentctl cluster settings set --claim-timeout")
	}
	if n.settings == nil {
		return nil // a nil *settings.Cluster must stay a nil interface
	}
	return n.settings
}
