package node

import "github.com/agentic-dev/agentic/node/health"

// HealthOf gives tests the node's health monitor, to register a check of
// their own.
func HealthOf(n *Node) *health.Monitor { return n.health }
