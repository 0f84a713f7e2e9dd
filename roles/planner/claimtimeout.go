package planner

import "time"

// ClaimSettings gives the claim timeout in force: the cluster setting
// (cluster.settings, planning.claim_timeout) that the orchestrators time
// their own no_planner decision by, so that a live planner's rejection,
// which says why it cannot plan the goal, comes first.
type ClaimSettings interface {
	// ClaimTimeout is the claim timeout in force; zero or less: not
	// known (Config.ClaimTimeout applies).
	ClaimTimeout() time.Duration
}

// claimTimeout is the claim timeout this planner times no_planner by:
// the cluster setting when Config.Settings gives one, else
// Config.ClaimTimeout.
func (p *Planner) claimTimeout() time.Duration {
	if p.cfg.Settings != nil {
		if d := p.cfg.Settings.ClaimTimeout(); d > 0 {
			return d
		}
	}
	return p.cfg.ClaimTimeout
}
