package node

// familyTemplate is the template in force for a plan family (the
// planner's Templates, roles/planner/template.go): the plan text an
// approved proposal made the family's template, folded from the ledger by
// the node's self-improvement loop (docs/improve.md).
func (n *Node) familyTemplate(family string) (string, bool) {
	if n.improve == nil {
		return "", false
	}
	t, ok := n.improve.Template(family)
	return t.Plan, ok
}
