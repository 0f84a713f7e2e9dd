package nodes

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/membership"
)

func live(name, inc string, st membership.State, at time.Time) membership.Member {
	return membership.Member{Meta: membership.Meta{Node: name, Incarnation: inc, Roles: []string{"executor"}, Slots: 3, Version: "v2"},
		Addr: name + ":7946", State: st, Since: at}
}

func TestMergeStates(t *testing.T) {
	rec := func(name, inc, state string) Node {
		return Node{Name: name, Incarnation: inc, State: state, Since: t0, Roles: []string{"executor"}, Slots: 2, Version: "v1"}
	}
	later := t0.Add(time.Minute)
	for _, tc := range []struct {
		name     string
		recorded []Node
		live     []membership.Member
		state    string
		since    time.Time
		inc      string
	}{
		{"recorded alone", []Node{rec("x", "1", StateAlive)}, nil, StateAlive, t0, "1"},
		{"live suspect is newer", []Node{rec("x", "1", StateAlive)}, []membership.Member{live("x", "1", membership.Suspect, later)}, StateSuspect, later, "1"},
		{"live dead is not dead until recorded", []Node{rec("x", "1", StateAlive)}, []membership.Member{live("x", "1", membership.Dead, later)}, StateSuspect, later, "1"},
		{"recorded dead stands", []Node{rec("x", "1", StateDead)}, []membership.Member{live("x", "1", membership.Dead, later)}, StateDead, t0, "1"},
		{"recorded dead, same process back", []Node{rec("x", "1", StateDead)}, []membership.Member{live("x", "1", membership.Alive, later)}, StateDead, t0, "1"},
		{"recorded dead, new process", []Node{rec("x", "1", StateDead)}, []membership.Member{live("x", "2", membership.Alive, later)}, StateAlive, later, "2"},
		{"live left", []Node{rec("x", "1", StateAlive)}, []membership.Member{live("x", "1", membership.Left, later)}, StateLeft, later, "1"},
		{"recorded left stands", []Node{rec("x", "1", StateLeft)}, []membership.Member{live("x", "1", membership.Left, later)}, StateLeft, t0, "1"},
		{"live only", nil, []membership.Member{live("x", "1", membership.Alive, later)}, StateAlive, later, "1"},
		{"no record of state", []Node{rec("x", "1", "")}, nil, "", time.Time{}, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.recorded != nil && tc.recorded[0].State == "" {
				tc.recorded[0].Since = time.Time{}
			}
			rows := Merge(MergeInput{Recorded: tc.recorded, Live: tc.live})
			if len(rows) != 1 {
				t.Fatalf("rows %+v", rows)
			}
			r := rows[0]
			if r.State != tc.state || !r.Since.Equal(tc.since) || r.Incarnation != tc.inc {
				t.Errorf("state %q since %s inc %s, want %q since %s inc %s", r.State, r.Since, r.Incarnation, tc.state, tc.since, tc.inc)
			}
			if tc.recorded != nil && r.Recorded != tc.recorded[0].State {
				t.Errorf("recorded_state %q", r.Recorded)
			}
			if tc.live != nil && r.Gossip != string(tc.live[0].State) {
				t.Errorf("gossip_state %q", r.Gossip)
			}
		})
	}
}

func TestMergeColumns(t *testing.T) {
	skew := -300 * time.Millisecond
	rows := Merge(MergeInput{
		Recorded: []Node{
			{Name: "b", Roles: []string{"executor"}, Capabilities: []string{"docker"}, Slots: 4, Queue: 4, State: StateAlive, Incarnation: "b1", Version: "v1", Draining: true, DrainReason: "upgrade"},
			{Name: "c", Roles: []string{"executor"}, Slots: 2, State: StateAlive, Incarnation: "c1"},
		},
		Live:   []membership.Member{live("b", "b1", membership.Alive, t0), live("a", "a1", membership.Alive, t0)},
		Self:   Self{Name: "a", Roles: []string{"orchestrator"}, Version: "v1", Incarnation: "a1"},
		Leader: "a",
		Epoch:  7,
		Skews:  map[string]time.Duration{"b": skew},
		Load:   map[string]int{"b": 3},
	})
	if len(rows) != 3 || rows[0].Name != "a" || rows[1].Name != "b" || rows[2].Name != "c" {
		t.Fatalf("rows %+v", rows)
	}
	a, b, c := rows[0], rows[1], rows[2]
	if !a.Leader || a.Epoch != 7 || b.Leader || b.Epoch != 0 || a.State != StateAlive || a.Recorded != "" || a.Gossip != "alive" {
		t.Errorf("a = %+v", a)
	}
	// The live view's announcement replaces b's recorded metadata; the
	// record keeps its queue and drain.
	if b.Slots != 3 || b.Queue != 4 || len(b.Capabilities) != 0 || b.Version != "v2" || !b.Draining || b.DrainReason != "upgrade" ||
		b.ClockSkew == nil || *b.ClockSkew != skew || b.SlotsUsed == nil || *b.SlotsUsed != 3 || b.Addr != "b:7946" {
		t.Errorf("b = %+v", b)
	}
	if c.ClockSkew != nil || c.SlotsUsed == nil || *c.SlotsUsed != 0 || c.Gossip != "" || c.Capabilities == nil {
		t.Errorf("c = %+v", c)
	}
	// No load hook: slots used unknown.
	if rows := Merge(MergeInput{Recorded: []Node{{Name: "b"}}}); rows[0].SlotsUsed != nil {
		t.Errorf("slots used without a load hook: %v", *rows[0].SlotsUsed)
	}
	// The answering node without gossip and without records is alive.
	rows = Merge(MergeInput{Self: Self{Name: "solo", Roles: []string{"executor"}, Version: "v1"}})
	if len(rows) != 1 || rows[0].State != StateAlive || rows[0].Roles[0] != "executor" {
		t.Errorf("solo = %+v", rows)
	}
}

func TestAfter(t *testing.T) {
	rows := []Summary{{Name: "a"}, {Name: "b"}, {Name: "d"}}
	for cursor, want := range map[string]int{"": 3, "a": 2, "b": 1, "c": 1, "d": 0, "z": 0} {
		if got := len(After(rows, cursor)); got != want {
			t.Errorf("After(%q) = %d rows, want %d", cursor, got, want)
		}
	}
}
