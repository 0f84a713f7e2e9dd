package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// DefaultDrainWait bounds node drain --wait unless told.
const DefaultDrainWait = 30 * time.Minute

func (a *app) nodeLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the cluster's nodes: roles, slots, state, leader, version, clock skew, readiness",
		Long: `List every node the cluster knows, in name order: its roles, executor
capabilities, slots used/total, membership state, how long it has been in
it, version and clock skew. The leader orchestrator is marked with * and
its epoch.

STATE is alive, suspect, dead or left: what the leader recorded in the
ledger (node.joined, node.suspect, node.failed, node.left), made newer by
the gossip view of the node that answers. A node is dead only once the
leader recorded node.failed; one the answering node's gossip lost before
that shows as suspect. "draining" follows a node asked to drain. Without
gossip (a single node), states are what the ledger holds and the
answering node is alive.

SLOTS is used/total: the tasks assigned to or running on the node, as the
answering node's orchestrator counts them ("-" when it cannot tell), over
the slots its executor announced. SKEW is how far the node's clock is
ahead of the NATS server's (negative: behind), measured by the answering
ledger node from the node's messages since it started ("-": none yet).
Past ±15s its events start being refused.

READY is what each node answers of itself (node.info, asked of every
node at once): "yes", or "no" and the first blocking readiness check that
fails ("-": the node did not answer within a second). -o json gives each
node's checks.

-o json prints a JSON array of node objects (see docs/cli.md), -o jsonl
one per line.`,
		Example: `  agentctl node ls
  agentctl node ls -o json | jq -r '.[] | select(.state != "alive") | .name'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			a.addReadiness(cmd.Context(), c, p.Items)
			if a.output != formatText {
				return writeList(a, p.Items)
			}
			return a.renderNodes(p, time.Now())
		},
	}
}

func (a *app) renderNodes(p *api.NodesPage[api.NodeSummary], now time.Time) error {
	w := a.table()
	fmt.Fprintln(w, "NAME\tROLES\tCAPABILITIES\tSLOTS\tSTATE\tSINCE\tVERSION\tSKEW\tREADY")
	for _, n := range p.Items {
		name := n.Name
		if n.Leader {
			name += " *"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, dash(strings.Join(n.Roles, ",")), dash(strings.Join(n.Capabilities, ",")),
			fmtSlots(n), fmtNodeState(n), fmtSince(n.Since, now), dash(n.Version), fmtSkew(n.ClockSkew), fmtReady(n))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return a.nodesFooter(a.env.Stdout, p)
}

func (a *app) nodesFooter(w io.Writer, p *api.NodesPage[api.NodeSummary]) error {
	leader := "no leader elected"
	if p.Leader != "" {
		leader = fmt.Sprintf("* leader %s, epoch %d", p.Leader, p.Epoch)
	}
	view := "gossip " + p.Gossip
	if p.Gossip == "" {
		view = "no gossip: states from the ledger"
	}
	_, err := fmt.Fprintf(w, "%s  (answered by %s; %s)\n", leader, p.Node, view)
	return err
}

// readinessWait bounds how long node ls waits for the nodes' node.info.
const readinessWait = time.Second

// addReadiness asks every node for its node.info at once and fills the
// readiness of the rows of those that answer (the answering node filled
// its own). A node that does not answer keeps what it had.
func (a *app) addReadiness(ctx context.Context, c *api.Client, rows []api.NodeSummary) {
	var expect []string
	for _, n := range rows {
		if n.Ready == nil && n.State != "dead" && n.State != "left" {
			expect = append(expect, n.Name)
		}
	}
	if len(expect) == 0 {
		return
	}
	answers, err := api.GatherFrom[api.NodeInfo](ctx, c, api.MethodNodeInfo, struct{}{}, min(a.timeout, readinessWait), expect)
	if err != nil {
		return // nodes of a version that does not answer: READY unknown
	}
	info := make(map[string]api.NodeInfo, len(answers))
	for _, ans := range answers {
		if ans.Err == nil {
			info[ans.Node] = ans.Data
		}
	}
	for i := range rows {
		in, ok := info[rows[i].Name]
		if !ok || rows[i].Ready != nil {
			continue
		}
		rows[i].Ready, rows[i].NotReady, rows[i].Checks = new(in.Ready), in.NotReady, in.Checks
	}
}

// fmtReady is a node's READY cell.
func fmtReady(n api.NodeSummary) string {
	switch {
	case n.Ready == nil:
		return "-"
	case *n.Ready:
		return "yes"
	}
	return "no: " + truncate(n.NotReady, 60)
}

func fmtSlots(n api.NodeSummary) string {
	if n.Slots == 0 {
		return "-"
	}
	used := "-"
	if n.SlotsUsed != nil {
		used = strconv.Itoa(*n.SlotsUsed)
	}
	return used + "/" + strconv.Itoa(n.Slots)
}

func fmtNodeState(n api.NodeSummary) string {
	s := dash(n.State)
	if n.Draining && n.State != "left" && n.State != "dead" {
		s += ",draining"
	}
	return s
}

func fmtSince(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmtDuration(now.Sub(t).Truncate(time.Second))
}

func fmtSkew(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1fs", d.Seconds())
}

// findNode returns the node named name from the listing.
func findNode(p *api.NodesPage[api.NodeSummary], name string) (api.NodeSummary, bool) {
	for _, n := range p.Items {
		if n.Name == name {
			return n, true
		}
	}
	return api.NodeSummary{}, false
}

// drainResult is what node drain prints with -o json.
type drainResult struct {
	Node   string `json:"node"`
	Event  string `json:"event"`
	Reason string `json:"reason,omitempty"`
	// State is the node's state when the command ended: left after
	// --wait.
	State string `json:"state"`
}

func (a *app) nodeDrainCmd() *cobra.Command {
	var reason string
	var wait bool
	var waitFor time.Duration
	cmd := &cobra.Command{
		Use:   "drain NAME",
		Short: "Ask a node to take no new work, finish what it runs, and leave",
		Long: `Publish a node.drain event, signed with your operator credentials. The
orchestrator assigns no new work to the node; its executor finishes the
steps it runs, then agentd stops and leaves the cluster (agentctl node ls
shows it left).

--wait follows the node (one line each time its state or load changes)
until it has left, for at most --wait-timeout; it fails if the node is
lost (dead) instead.`,
		Example: `  agentctl node drain node-b --reason "kernel upgrade"
  agentctl node drain node-b --wait --wait-timeout 10m`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if waitFor <= 0 {
				return usagef("--wait-timeout must be positive, got %s", waitFor)
			}
			return a.nodeDrain(cmd.Context(), argv[0], reason, wait, waitFor)
		},
	}
	f := cmd.Flags()
	f.StringVar(&reason, "reason", "", "why, recorded in the ledger")
	f.BoolVar(&wait, "wait", false, "wait until the node has left")
	f.DurationVar(&waitFor, "wait-timeout", DefaultDrainWait, "how long --wait waits")
	return cmd
}

func (a *app) nodeDrain(ctx context.Context, name, reason string, wait bool, waitFor time.Duration) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	p, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	n, ok := findNode(p, name)
	switch {
	case !ok:
		return api.WithHint(fmt.Errorf("no node %q in the cluster", name), "list them with: agentctl node ls")
	case n.State == "left" || n.State == "dead":
		return fmt.Errorf("node %s is %s: nothing to drain", name, n.State)
	}
	d, err := event.NewDraft(event.NodeDrain, "", event.NodeDrainData{Node: name, Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("drain node %s: %w", name, err)
	}
	res := drainResult{Node: name, Event: d.ID, Reason: reason, State: n.State}
	if a.output == formatText {
		fmt.Fprintf(a.env.Stdout, "drain requested for node %s (event %s)\n", name, d.ID)
	}
	if wait {
		if res.State, err = a.waitLeft(ctx, c, name, waitFor); err != nil {
			return err
		}
	}
	if a.output != formatText {
		return a.writeJSON(res)
	}
	return nil
}

// waitLeft polls nodes.list until the node has left, printing a line each
// time what it shows of the node changes.
func (a *app) waitLeft(ctx context.Context, c *api.Client, name string, waitFor time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	last := ""
	t := time.NewTicker(a.poll)
	defer t.Stop()
	for {
		p, err := c.Nodes(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			return "", err
		default:
			n, ok := findNode(p, name)
			line := "not listed"
			if ok {
				line = fmt.Sprintf("%s, slots %s", fmtNodeState(n), fmtSlots(n))
			}
			if line != last && a.output == formatText {
				fmt.Fprintf(a.env.Stdout, "%s  node %s: %s\n", time.Now().Format("15:04:05"), name, line)
			}
			last = line
			switch {
			case ok && n.State == "left":
				if a.output == formatText {
					fmt.Fprintf(a.env.Stdout, "node %s drained and left\n", name)
				}
				return n.State, nil
			case ok && n.State == "dead":
				return n.State, fmt.Errorf("node %s was lost (dead) while draining: its unfinished work is reassigned by the leader", name)
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", api.WithHint(fmt.Errorf("node %s has not left after %s (last: %s)", name, waitFor, last),
					"it may still be finishing long steps: follow it with agentctl node ls, or wait longer with --wait-timeout")
			}
			return "", ctx.Err()
		case <-t.C:
		}
	}
}
