package membership

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func meta(name, inc string) Meta {
	return Meta{Node: name, Incarnation: inc, Roles: []string{"executor"}, Slots: 2}
}

func TestTableStates(t *testing.T) {
	tb := newTable("a", time.Hour, 10)
	steps := []struct {
		what    string
		do      func() bool
		changed bool
		b       State
		since   time.Time
	}{
		{"b joins", func() bool { return tb.alive(meta("b", "1"), "h:1", t0) }, true, Alive, t0},
		{"same again", func() bool { return tb.alive(meta("b", "1"), "h:1", t0.Add(time.Second)) }, false, Alive, t0},
		{"meta change keeps since", func() bool {
			m := meta("b", "1")
			m.Draining = true
			return tb.alive(m, "h:1", t0.Add(2*time.Second))
		}, true, Alive, t0},
		{"suspect", func() bool { return tb.suspect("b", t0.Add(3*time.Second)) }, true, Suspect, t0.Add(3 * time.Second)},
		{"suspect again", func() bool { return tb.suspect("b", t0.Add(4*time.Second)) }, false, Suspect, t0.Add(3 * time.Second)},
		{"ack ends it", func() bool { return tb.ack("b", t0.Add(5*time.Second)) }, true, Alive, t0.Add(5 * time.Second)},
		{"ack of alive", func() bool { return tb.ack("b", t0.Add(6*time.Second)) }, false, Alive, t0.Add(5 * time.Second)},
		{"gone without leaving: dead", func() bool { return tb.gone("b", Meta{}, t0.Add(7*time.Second)) }, true, Dead, t0.Add(7 * time.Second)},
		{"suspect of dead", func() bool { return tb.suspect("b", t0.Add(8*time.Second)) }, false, Dead, t0.Add(7 * time.Second)},
		{"gone again", func() bool { return tb.gone("b", Meta{}, t0.Add(8*time.Second)) }, false, Dead, t0.Add(7 * time.Second)},
		{"restart: new incarnation", func() bool { return tb.alive(meta("b", "2"), "h:2", t0.Add(9*time.Second)) }, true, Alive, t0.Add(9 * time.Second)},
		{"new incarnation, same address", func() bool { return tb.alive(meta("b", "3"), "h:2", t0.Add(10*time.Second)) }, true, Alive, t0.Add(10 * time.Second)},
		{"announces leaving", func() bool {
			m := meta("b", "3")
			m.Leaving = true
			return tb.alive(m, "h:2", t0.Add(11*time.Second))
		}, true, Alive, t0.Add(10 * time.Second)},
		{"gone after leaving: left", func() bool { return tb.gone("b", Meta{}, t0.Add(12*time.Second)) }, true, Left, t0.Add(12 * time.Second)},
	}
	for _, s := range steps {
		if got := s.do(); got != s.changed {
			t.Errorf("%s: changed = %v, want %v", s.what, got, s.changed)
		}
		b, _ := tb.get("b")
		if b.State != s.b || !b.Since.Equal(s.since) {
			t.Errorf("%s: b %s since %s, want %s since %s", s.what, b.State, b.Since, s.b, s.since)
		}
	}
	// A leave announced only in the lost member's last metadata counts,
	// for the same process.
	tb.alive(meta("c", "1"), "h:3", t0)
	m := meta("c", "1")
	m.Leaving = true
	tb.gone("c", m, t0)
	if c, _ := tb.get("c"); c.State != Left {
		t.Errorf("c is %s, want left", c.State)
	}
	// This node never suspects itself.
	tb.alive(meta("a", "1"), "h:0", t0)
	if tb.suspect("a", t0) {
		t.Error("a suspected itself")
	}
	if tb.suspect("nobody", t0) || tb.ack("nobody", t0) || tb.gone("nobody", Meta{}, t0) {
		t.Error("an unknown member changed the table")
	}
}

func TestTableKeepsGoneMembersForRetention(t *testing.T) {
	tb := newTable("a", time.Minute, 10)
	tb.alive(meta("a", "1"), "h:0", t0)
	tb.alive(meta("b", "1"), "h:1", t0)
	tb.gone("b", Meta{}, t0)
	if got := tb.list(t0.Add(time.Minute)); len(got) != 2 || got[1].State != Dead {
		t.Fatalf("within retention: %+v", got)
	}
	if got := tb.list(t0.Add(time.Minute + time.Nanosecond)); len(got) != 1 || got[0].Node != "a" {
		t.Fatalf("after retention: %+v", got)
	}
}

func TestTableBoundsGoneMembers(t *testing.T) {
	tb := newTable("a", time.Hour, 3)
	tb.alive(meta("a", "1"), "h:0", t0)
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		tb.alive(meta(name, "1"), "h:1", t0)
		tb.gone(name, Meta{}, t0.Add(time.Duration(i)*time.Second))
	}
	tb.alive(meta("live", "1"), "h:2", t0)
	got := tb.list(t0.Add(10 * time.Second))
	var names []string
	for _, m := range got {
		names = append(names, m.Node)
	}
	if fmt.Sprint(names) != "[a live n7 n8 n9]" {
		t.Errorf("kept %v, want a, live and the three newest gone", names)
	}
}

func TestListIsACopy(t *testing.T) {
	tb := newTable("a", time.Hour, 3)
	tb.alive(meta("a", "1"), "h:0", t0)
	l := tb.list(t0)
	l[0].Roles[0] = "changed"
	if a, _ := tb.get("a"); a.Roles[0] != "executor" {
		t.Error("list shares the table's slices")
	}
}

func TestChangedIsLevelTriggered(t *testing.T) {
	m := &Membership{changed: make(chan struct{}, 1), now: func() time.Time { return t0 }}
	m.mu.table = newTable("a", time.Hour, 3)
	for i := range 5 { // never blocks
		m.change(func(tb *table, now time.Time) bool { return tb.alive(meta(fmt.Sprint("n", i), "1"), "h:1", now) })
	}
	<-m.Changed()
	select {
	case <-m.Changed():
		t.Error("a second signal is pending")
	default:
	}
	m.change(func(tb *table, now time.Time) bool { return tb.alive(meta("n0", "1"), "h:1", now) }) // no change
	select {
	case <-m.Changed():
		t.Error("signalled without a change")
	default:
	}
	if n := len(m.Members()); n != 5 {
		t.Errorf("%d members, want 5", n)
	}
}

func TestLogWriterNotesSuspicions(t *testing.T) {
	m := &Membership{changed: make(chan struct{}, 1), now: func() time.Time { return t0 }, log: testLogger()}
	m.mu.table = newTable("a", time.Hour, 3)
	m.change(func(tb *table, now time.Time) bool { return tb.alive(meta("b c", "1"), "h:1", now) })
	<-m.Changed()
	w := logWriter{m}
	w.Write([]byte("[DEBUG] memberlist: Failed UDP ping: b c (timeout reached)\n"))
	if stateOf(m, "b c") != Alive {
		t.Fatal("a failed ping is not a suspicion")
	}
	w.Write([]byte("[INFO] memberlist: Suspect b c has failed, no acks received\n"))
	if s := stateOf(m, "b c"); s != Suspect {
		t.Fatalf("b c is %s after the suspect line", s)
	}
}
