package nodes

import (
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/node/membership"
)

// Summary is one row of nodes.list (apiwire.Summary, the wire type).
type Summary = apiwire.Summary

// Self is the answering node: it is alive, whatever else is known.
type Self struct {
	Name        string
	Roles       []string
	Version     string
	Incarnation string
}

// MergeInput is what Merge combines.
type MergeInput struct {
	// Recorded is the model's List.
	Recorded []Node
	// Live is the answering node's gossip view; nil when it runs none.
	Live []membership.Member
	Self Self
	// Leader is the orchestrator leader's name ("" if none elected) and
	// Epoch its epoch.
	Leader string
	Epoch  uint64
	// Skews is each signer's clock skew (ledger/follow).
	Skews map[string]time.Duration
	// Load is the tasks assigned or running per node; nil: unknown.
	Load map[string]int
}

// Merge builds the nodes.list rows, in name order: every node recorded,
// every member of the live view, and the answering node. The state rule:
//
//   - recorded dead or left stands, unless the live view has another
//     process of the node (a newer incarnation) alive or suspect;
//   - otherwise a live alive or suspect, or a live left, is newer than
//     the record and shown;
//   - a live dead that the ledger does not record as failed shows as
//     suspect: dead means a node.failed event;
//   - the answering node with no state known is alive.
func Merge(in MergeInput) []Summary {
	rec := make(map[string]Node, len(in.Recorded))
	names := make([]string, 0, len(in.Recorded)+len(in.Live)+1)
	for _, r := range in.Recorded {
		rec[r.Name] = r
		names = append(names, r.Name)
	}
	live := make(map[string]membership.Member, len(in.Live))
	for _, l := range in.Live {
		live[l.Node] = l
		names = append(names, l.Node)
	}
	if in.Self.Name != "" {
		names = append(names, in.Self.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]Summary, 0, len(names))
	for _, name := range names {
		r, recorded := rec[name]
		s := fromRecord(name, r)
		if l, ok := live[name]; ok {
			mergeLive(&s, r, recorded, l)
		}
		if name == in.Self.Name {
			mergeSelf(&s, in.Self)
		}
		if name != "" && name == in.Leader {
			s.Leader, s.Epoch = true, in.Epoch
		}
		if d, ok := in.Skews[name]; ok {
			s.ClockSkew = &d
		}
		if in.Load != nil {
			used := in.Load[name]
			s.SlotsUsed = &used
		}
		if s.Roles == nil {
			s.Roles = []string{}
		}
		if s.Capabilities == nil {
			s.Capabilities = []string{}
		}
		out = append(out, s)
	}
	return out
}

func fromRecord(name string, r Node) Summary {
	var alarms []event.Alarm
	for _, a := range r.Alarms {
		alarms = append(alarms, a.Alarm)
	}
	return Summary{
		Name: name, Roles: slices.Clone(r.Roles), Capabilities: slices.Clone(r.Capabilities),
		Slots: r.Slots, Queue: r.Queue, State: r.State, Since: r.Since, Recorded: r.State, Reason: r.Reason,
		Version: r.Version, Incarnation: r.Incarnation, Addr: r.Addr, Draining: r.Draining, DrainReason: r.DrainReason,
		Alarms: alarms,
	}
}

// mergeLive lays the live view of a member over its record. Its
// metadata is the process's own announcement, as current as any record
// of the same process: it replaces the recorded roles, capabilities,
// slots, version and address (the queue is only recorded).
func mergeLive(s *Summary, r Node, recorded bool, l membership.Member) {
	s.Gossip = string(l.State)
	newer := !recorded || l.Incarnation != r.Incarnation
	s.Roles, s.Capabilities, s.Slots = slices.Clone(l.Roles), slices.Clone(l.Capabilities), l.Slots
	s.Version, s.Incarnation, s.Addr = l.Version, l.Incarnation, l.Addr
	if l.Draining {
		s.Draining = true
	}
	gone := r.State == StateDead || r.State == StateLeft
	switch l.State {
	case membership.Alive, membership.Suspect:
		if gone && !newer {
			return // the leader recorded this process gone
		}
		s.State, s.Since = string(l.State), l.Since
	case membership.Left:
		if r.State != StateLeft {
			s.State, s.Since = StateLeft, l.Since
		}
	case membership.Dead:
		if !gone {
			s.State, s.Since = StateSuspect, l.Since
		}
	}
}

// mergeSelf fills what the answering node knows of itself: its roles,
// version and process are its own, whatever was recorded or announced.
func mergeSelf(s *Summary, self Self) {
	s.Roles = slices.Clone(self.Roles)
	if self.Version != "" {
		s.Version = self.Version
	}
	if self.Incarnation != "" {
		s.Incarnation = self.Incarnation
	}
	if s.State == "" {
		s.State = StateAlive
	}
}

// After returns the rows after cursor (a node name; "" for all).
func After(rows []Summary, cursor string) []Summary {
	i, _ := slices.BinarySearchFunc(rows, cursor, func(s Summary, c string) int { return strings.Compare(s.Name, c) })
	for i < len(rows) && rows[i].Name <= cursor {
		i++
	}
	return rows[i:]
}
