package membership

import (
	"slices"
	"strings"
	"time"
)

// table is the member table as this node sees it. It is pure (the clock
// is passed in); Membership guards it with its mutex. Every method that
// changes it reports whether it did.
type table struct {
	self      string
	retention time.Duration
	maxGone   int
	members   map[string]*Member
}

func newTable(self string, retention time.Duration, maxGone int) *table {
	return &table{self: self, retention: retention, maxGone: maxGone, members: map[string]*Member{}}
}

// alive records a member that joined, came back, or announced new
// metadata. Since moves when it was not alive, or is another process (a
// new incarnation).
func (t *table) alive(meta Meta, addr string, now time.Time) bool {
	m, ok := t.members[meta.Node]
	if ok && m.State == Alive && m.Addr == addr && metaEqual(m.Meta, meta) {
		return false
	}
	if !ok {
		m = &Member{}
		t.members[meta.Node] = m
	}
	if !ok || m.State != Alive || m.Incarnation != meta.Incarnation {
		m.Since = now
	}
	m.Meta, m.Addr, m.State = meta, addr, Alive
	return true
}

// gone records a member memberlist no longer has: Left if it announced
// that it leaves (in the metadata it last had, or in meta), Dead
// otherwise.
func (t *table) gone(name string, meta Meta, now time.Time) bool {
	m, ok := t.members[name]
	if !ok || m.State == Dead || m.State == Left {
		return false
	}
	m.State = Dead
	if m.Leaving || meta.Leaving && meta.Incarnation == m.Incarnation {
		m.State = Left
	}
	m.Since = now
	t.bound()
	return true
}

// suspect records that this node's probe of a live member failed.
func (t *table) suspect(name string, now time.Time) bool {
	m, ok := t.members[name]
	if !ok || name == t.self || m.State != Alive {
		return false
	}
	m.State, m.Since = Suspect, now
	return true
}

// ack records that a member answered this node's probe: a suspicion
// ends.
func (t *table) ack(name string, now time.Time) bool {
	m, ok := t.members[name]
	if !ok || m.State != Suspect {
		return false
	}
	m.State, m.Since = Alive, now
	return true
}

// list returns the members in name order, after dropping the dead and
// left ones older than the retention.
func (t *table) list(now time.Time) []Member {
	for name, m := range t.members {
		if goneState(m.State) && now.Sub(m.Since) > t.retention {
			delete(t.members, name)
		}
	}
	out := make([]Member, 0, len(t.members))
	for _, m := range t.members {
		c := *m
		c.Roles = slices.Clone(m.Roles)
		c.Capabilities = slices.Clone(m.Capabilities)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// get returns one member.
func (t *table) get(name string) (Member, bool) {
	m, ok := t.members[name]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// bound drops the oldest dead and left members beyond maxGone.
func (t *table) bound() {
	var gone []*Member
	for _, m := range t.members {
		if goneState(m.State) {
			gone = append(gone, m)
		}
	}
	if len(gone) <= t.maxGone {
		return
	}
	slices.SortFunc(gone, func(a, b *Member) int { return a.Since.Compare(b.Since) })
	for _, m := range gone[:len(gone)-t.maxGone] {
		delete(t.members, m.Node)
	}
}

func goneState(s State) bool { return s == Dead || s == Left }

func metaEqual(a, b Meta) bool {
	return a.Node == b.Node && a.Incarnation == b.Incarnation && a.Slots == b.Slots && a.Version == b.Version &&
		a.Draining == b.Draining && a.Leaving == b.Leaving &&
		slices.Equal(a.Roles, b.Roles) && slices.Equal(a.Capabilities, b.Capabilities)
}
