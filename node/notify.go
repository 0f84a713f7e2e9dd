package node

import (
	"github.com/agentic-dev/agentic/node/notify"
)

// newNotifier builds the notifier of the gates that open, on a node that
// runs the orchestrator and has notify.webhook or notify.exec set: it
// sends only while this node leads. It returns nil otherwise.
func (n *Node) newNotifier() *notify.Notifier {
	if n.orch == nil || (n.cfg.Notify.Webhook == "" && n.cfg.Notify.Exec == "") {
		return nil
	}
	orch := n.orch
	nt := notify.New(notify.Config{
		Webhook: n.cfg.Notify.Webhook, Exec: n.cfg.Notify.Exec, Batch: n.cfg.Notify.Batch,
		Leading: func() bool { return orch.Leader() > 0 },
		Cluster: n.cfg.NATSClusterName, Node: n.cfg.Name, Logger: n.log.With("part", "notify"),
	})
	n.log.Info("gates are notified", "webhook", n.cfg.Notify.Webhook != "", "exec", n.cfg.Notify.Exec != "", "batch", n.cfg.Notify.Batch)
	return nt
}
