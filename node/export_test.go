package node

import "github.com/agentic-dev/agentic/internal/health"

// HealthOf gives tests the node's health monitor, to register a check of
// their own.
func HealthOf(n *Node) *health.Monitor { return n.health }

// SetAuditExamine sets how many entries a filtered audit page passes over
// at most, and returns what restores it.
func SetAuditExamine(n int) (restore func()) {
	old := auditExamine.Swap(int64(n))
	return func() { auditExamine.Store(old) }
}
