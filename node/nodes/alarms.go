package nodes

import (
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// MaxAlarms bounds the alarms the model keeps in force per node (there
// are six codes today; a newer version may add some).
const MaxAlarms = 32

// Alarm is an alarm in force on a node (apiwire.Alarm, the wire type).
type Alarm = apiwire.Alarm

// alarm applies an alarm.raised or alarm.cleared. The alarm is about its
// signer: an event naming another node is ignored.
func (n *Nodes) alarm(ev event.Event) {
	var d event.AlarmData
	if !n.decode(ev, &d) {
		return
	}
	if ev.Node == "" || d.Alarm == "" || (d.Node != "" && d.Node != ev.Node) {
		n.log.Warn("nodes: alarm ignored: no code, or about another node than its signer", "event", ev.ID, "seq", ev.Seq, "signer", ev.Node, "node", d.Node, "alarm", d.Alarm)
		return
	}
	if ev.Type == event.AlarmCleared {
		nd, ok := n.nodes[ev.Node]
		if !ok {
			return
		}
		i := slices.IndexFunc(nd.Alarms, func(a Alarm) bool { return a.Alarm == d.Alarm })
		if i < 0 {
			return
		}
		n.dirty = true
		nd.Alarms = slices.Delete(slices.Clone(nd.Alarms), i, i+1)
		if len(nd.Alarms) == 0 {
			nd.Alarms = nil
		}
		return
	}
	nd := n.node(ev.Node, ev.Seq)
	a := Alarm{Node: ev.Node, Alarm: d.Alarm, Check: d.Check, Reason: d.Reason, Since: d.Since, Raised: ev.Time, Seq: ev.Seq}
	alarms := slices.Clone(nd.Alarms)
	i, found := slices.BinarySearchFunc(alarms, d.Alarm, func(a Alarm, c event.Alarm) int { return strings.Compare(string(a.Alarm), string(c)) })
	switch {
	case found:
		alarms[i] = a // raised again (a node that lost its alarms file): the newest says
	case len(alarms) >= MaxAlarms:
		n.log.Warn("nodes: alarm ignored: the node has too many alarms in force", "node", ev.Node, "alarm", d.Alarm, "max", MaxAlarms)
		return
	default:
		alarms = slices.Insert(alarms, i, a)
	}
	nd.Alarms = alarms
}

// Alarms returns the alarms in force as of the last batch folded, by node
// then code.
func (n *Nodes) Alarms() []Alarm {
	var out []Alarm
	for _, nd := range n.List() {
		out = append(out, nd.Alarms...)
	}
	return out
}

// AlarmsAfter returns the alarms after cursor (AlarmCursor of the last one
// seen; "" for all); alarms is sorted as Alarms returns them.
func AlarmsAfter(alarms []Alarm, cursor string) []Alarm {
	if cursor == "" {
		return alarms
	}
	i, _ := slices.BinarySearchFunc(alarms, cursor, func(a Alarm, c string) int { return strings.Compare(AlarmCursor(a), c) })
	for i < len(alarms) && AlarmCursor(alarms[i]) <= cursor {
		i++
	}
	return alarms[i:]
}

// AlarmCursor is the position of a in the listing: its node and code,
// which sort as Alarms orders them.
func AlarmCursor(a Alarm) string { return a.Node + "\x00" + string(a.Alarm) }
