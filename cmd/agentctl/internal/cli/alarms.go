package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
)

func (a *app) alarmCmd() *cobra.Command {
	return group("alarm", "List the alarms in force in the cluster",
		`A node raises an alarm (alarm.raised, in the ledger) once when one of its
readiness checks that carries one fails — NOSPACE, CORRUPT,
STREAM_MISSING, STREAM_DRIFT, CONSUMER_MISSING, CLOCK_SKEW — and clears
it (alarm.cleared) once when the cause is gone.`,
		a.alarmLsCmd())
}

func (a *app) alarmLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the alarms in force, per node",
		Long: `List the alarms raised and not cleared since, by node then code, as the
answering ledger node folded them from the ledger: the node, the alarm's
code, the readiness check that raised it, since when the node saw the
fault, and why.

A fault a node reports in its readiness checks (what its /readyz says)
but could not record in the ledger — the events stream it would go to is
gone, or its disk is full — is listed too, from the node's own answer,
its reason ending "(not recorded in the ledger: the node's own report)"
("unrecorded": true in JSON). Nodes that do not answer within a second
are left out.

-o json prints a JSON array of alarm objects (see docs/cli.md), -o jsonl
one per line.`,
		Example: `  agentctl alarm ls
  agentctl alarm ls -o json | jq -r '.[] | select(.alarm == "NOSPACE") | .node'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			alarms, err := c.Alarms(cmd.Context())
			if err != nil {
				return err
			}
			alarms = a.addUnrecorded(cmd.Context(), c, alarms)
			if a.output != formatText {
				return writeList(a, alarms)
			}
			return a.renderAlarms(alarms, time.Now())
		},
	}
}

func (a *app) renderAlarms(alarms []api.Alarm, now time.Time) error {
	if len(alarms) == 0 {
		_, err := fmt.Fprintln(a.env.Stdout, "no alarms in force")
		return err
	}
	w := a.table()
	fmt.Fprintln(w, "NODE\tALARM\tCHECK\tSINCE\tREASON")
	for _, al := range alarms {
		since := al.Since
		if since.IsZero() {
			since = al.Raised
		}
		reason := al.Reason
		if al.Unrecorded {
			reason = strings.TrimSpace(reason + " " + unrecordedNote)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", al.Node, al.Alarm, dash(al.Check), fmtSince(since, now), dash(reason))
	}
	return w.Flush()
}

// unrecordedNote ends the reason of an alarm the ledger does not hold.
const unrecordedNote = "(not recorded in the ledger: the node's own report)"

// addUnrecorded adds to alarms (from the ledger) the faults the nodes
// report in their readiness checks that carry an alarm the ledger does not
// hold for that node: a node that cannot publish (no events stream, a full
// disk) still says so when asked. It asks every node for its node.info at
// once, waiting for the nodes the ledger knows alive (at most
// readinessWait); a node that does not answer adds nothing. The result is
// sorted by node then code, as alarms.list sorts.
func (a *app) addUnrecorded(ctx context.Context, c *api.Client, alarms []api.Alarm) []api.Alarm {
	var expect []string
	if p, err := c.Nodes(ctx); err == nil {
		for _, n := range p.Items {
			if n.State != "dead" && n.State != "left" {
				expect = append(expect, n.Name)
			}
		}
	}
	answers, err := api.GatherFrom[api.NodeInfo](ctx, c, api.MethodNodeInfo, struct{}{}, min(a.timeout, readinessWait), expect)
	if err != nil {
		return alarms
	}
	recorded := make(map[string]bool, len(alarms))
	for _, al := range alarms {
		recorded[al.Node+"\x00"+string(al.Alarm)] = true
	}
	for _, ans := range answers {
		if ans.Err != nil {
			continue
		}
		node := cmp.Or(ans.Data.ID, ans.Node)
		for _, ch := range ans.Data.Checks {
			key := node + "\x00" + string(ch.Alarm)
			if ch.OK || ch.Alarm == "" || recorded[key] {
				continue
			}
			recorded[key] = true
			alarms = append(alarms, api.Alarm{Node: node, Alarm: ch.Alarm, Check: ch.Name, Reason: ch.Reason, Since: ch.Since, Unrecorded: true})
		}
	}
	slices.SortStableFunc(alarms, func(x, y api.Alarm) int {
		return cmp.Or(strings.Compare(x.Node, y.Node), strings.Compare(string(x.Alarm), string(y.Alarm)))
	})
	return alarms
}

// writeCause explains a write that nothing acknowledged in time (err, a
// deadline): it asks every node at once for its node.info and, when some
// report a fault that stops writes — a full disk (NOSPACE), the events
// stream missing (STREAM_MISSING) — names them, node by node, instead of
// leaving only the deadline. Any other error, or no such fault, is
// returned as it is.
func (a *app) writeCause(ctx context.Context, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return err
	}
	c, cerr := a.client()
	if cerr != nil {
		return err
	}
	wait := min(a.timeout, readinessWait)
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*wait)
	defer cancel()
	answers, gerr := api.Gather[api.NodeInfo](gctx, c, api.MethodNodeInfo, struct{}{}, wait)
	if gerr != nil {
		return err
	}
	var causes []string
	for _, ans := range answers {
		if ans.Err != nil {
			continue
		}
		for _, ch := range ans.Data.Checks {
			if !ch.OK && (ch.Alarm == event.AlarmNoSpace || ch.Alarm == event.AlarmStreamMissing) {
				causes = append(causes, fmt.Sprintf("node %s reports %s: %s", cmp.Or(ans.Data.ID, ans.Node), ch.Alarm, ch.Reason))
			}
		}
	}
	if len(causes) == 0 {
		return err
	}
	return api.WithHint(fmt.Errorf("%w: nothing acknowledged the write in time, and %s", err, strings.Join(causes, "; ")),
		"free disk space on that node (or bring the stream back), then run the command again; the write was most likely not recorded (agentctl run list shows whether it was); agentctl alarm ls lists the faults")
}
