package membership

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// memberlist calls the delegates below under its internal lock or from
// its probe and packet goroutines. Each copies what it needs from the
// node it is given (whose fields memberlist may change once it returns),
// takes only the Membership's own mutex, and signals Changed without
// blocking. None calls memberlist.

// delegate announces this node's metadata.
type delegate struct{ m *Membership }

var _ memberlist.Delegate = delegate{}

// NodeMeta returns the encoded metadata (checked against the limit when
// it was set).
func (d delegate) NodeMeta(limit int) []byte {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	if len(d.m.mu.encoded) > limit {
		return nil
	}
	return bytes.Clone(d.m.mu.encoded)
}

// NotifyMsg, GetBroadcasts, LocalState and MergeRemoteState: agentic
// sends no user messages over gossip; events travel on the bus.
func (delegate) NotifyMsg([]byte)                           {}
func (delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (delegate) LocalState(join bool) []byte                { return nil }
func (delegate) MergeRemoteState(buf []byte, join bool)     {}

// events keeps the table from memberlist's joins, updates and leaves.
type events struct{ m *Membership }

var _ memberlist.EventDelegate = events{}

// NotifyJoin: a member joined or came back.
func (e events) NotifyJoin(n *memberlist.Node) { e.alive(n) }

// NotifyUpdate: a member announced new metadata.
func (e events) NotifyUpdate(n *memberlist.Node) { e.alive(n) }

func (e events) alive(n *memberlist.Node) {
	meta, err := decodeMeta(n.Name, n.Meta)
	addr := nodeAddr(n)
	if err != nil {
		e.m.log.Warn("member's metadata does not decode; kept by name only", "member", n.Name, "addr", addr, "err", err)
	}
	e.m.change(func(t *table, now time.Time) bool { return t.alive(meta, addr, now) })
}

// NotifyLeave: memberlist lost the member, by a leave or a failure (it
// does not say which: see table.gone).
func (e events) NotifyLeave(n *memberlist.Node) {
	meta, _ := decodeMeta(n.Name, n.Meta)
	name := n.Name
	e.m.change(func(t *table, now time.Time) bool { return t.gone(name, meta, now) })
}

// pings ends suspicions: a member that answers this node's probe is
// alive.
type pings struct{ m *Membership }

var _ memberlist.PingDelegate = pings{}

// AckPayload adds nothing to acks.
func (pings) AckPayload() []byte { return nil }

// NotifyPingComplete is called when a member answered a direct probe.
// Only the node's name is read: memberlist does not change it.
func (p pings) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	name := other.Name
	p.m.change(func(t *table, now time.Time) bool { return t.ack(name, now) })
}

// conflicts reports a second node using a member's name.
type conflicts struct{ m *Membership }

var _ memberlist.ConflictDelegate = conflicts{}

// NotifyConflict is called when a node claims a live member's name from
// another address: it is refused until the member there is dead or left.
func (c conflicts) NotifyConflict(existing, other *memberlist.Node) {
	c.m.log.Warn("a node claims a live member's name from another address; refused until that member is dead or left (a restart is accepted once the old process is detected dead)",
		"member", existing.Name, "addr", nodeAddr(existing), "claimed_from", nodeAddr(other))
}

// suspectPrefix and suspectSuffix frame the line memberlist logs when a
// probe from this node found no way to reach a member, just before it
// marks the member suspect ("[INFO] memberlist: Suspect %s has failed, no
// acks received"). TestSuspectIsSeen pins it against the memberlist
// version in go.mod.
const (
	suspectPrefix = "Suspect "
	suspectSuffix = " has failed, no acks received"
)

// logWriter takes memberlist's log lines ("[LEVEL] memberlist: text") to
// slog at their level, and notes this node's suspicions.
type logWriter struct{ m *Membership }

func (w logWriter) Write(p []byte) (int, error) {
	if w.m.stopped.Load() {
		// memberlist winds down after Stop: nothing it says matters.
		return len(p), nil
	}
	line := strings.TrimRight(string(p), "\n")
	lvl, text := slog.LevelInfo, line
	for _, l := range []struct {
		tag string
		lvl slog.Level
	}{{"[DEBUG] ", slog.LevelDebug}, {"[INFO] ", slog.LevelInfo}, {"[WARN] ", slog.LevelWarn}, {"[ERR] ", slog.LevelError}} {
		if rest, ok := strings.CutPrefix(line, l.tag); ok {
			lvl, text = l.lvl, rest
			break
		}
	}
	text = strings.TrimPrefix(text, "memberlist: ")
	if rest, ok := strings.CutPrefix(text, suspectPrefix); ok {
		if name, ok := strings.CutSuffix(rest, suspectSuffix); ok {
			w.m.change(func(t *table, now time.Time) bool { return t.suspect(name, now) })
		}
	}
	w.m.log.Log(context.Background(), lvl, "memberlist", "text", text)
	return len(p), nil
}
