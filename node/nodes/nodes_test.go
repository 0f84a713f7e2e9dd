package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// history builds ledger events, numbered from 1, a second apart.
type history struct{ evs []event.Event }

func (h *history) add(typ event.Type, signer string, data any) *history {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	seq := uint64(len(h.evs) + 1)
	h.evs = append(h.evs, event.Event{Seq: seq, ID: fmt.Sprint("ev", seq), Type: typ, Node: signer, Time: t0.Add(time.Duration(seq) * time.Second), Data: b})
	return h
}

func (h *history) elected(leader string, epoch uint64) *history {
	return h.add(event.LeaderElected, leader, event.LeaderElectedData{Decision: event.Decision{Epoch: epoch}, Leader: leader})
}

func (h *history) member(typ event.Type, epoch uint64, d event.NodeData) *history {
	d.Epoch = epoch
	return h.add(typ, "leader", d)
}

func fold(evs []event.Event) *Nodes {
	n := New(quiet())
	for _, ev := range evs {
		n.Fold(ev)
	}
	n.Settled(true)
	return n
}

func byName(n *Nodes) map[string]Node {
	out := map[string]Node{}
	for _, nd := range n.List() {
		out[nd.Name] = nd
	}
	return out
}

func sample() *history {
	h := &history{}
	h.elected("a", 5)
	h.member(event.NodeJoined, 5, event.NodeData{Node: "b", Incarnation: "b1", Roles: []string{"executor", "orchestrator"}, Capabilities: []string{"docker"}, Slots: 4, Version: "v1", Addr: "10.0.0.2:7946"})
	h.add(event.ExecutorOnline, "b", event.ExecutorOnlineData{Slots: 4, Queue: 4, Incarnation: "b1", Capabilities: []string{"docker"}, Version: "v1"})
	h.member(event.NodeJoined, 5, event.NodeData{Node: "c", Incarnation: "c1", Roles: []string{"executor"}, Slots: 2, Version: "v1"})
	h.add(event.NodeDrain, "operator-x", event.NodeDrainData{Node: "b", Reason: "kernel upgrade"})
	h.member(event.NodeSuspect, 5, event.NodeData{Node: "c", Incarnation: "c1", Reason: "no acks"})
	h.member(event.NodeFailed, 4, event.NodeData{Node: "b", Incarnation: "b1", Reason: "from a deposed leader"}) // fenced
	h.member(event.NodeFailed, 5, event.NodeData{Node: "c", Incarnation: "c1", Reason: "suspicion timed out"})
	h.add(event.ExecutorOnline, "d", event.ExecutorOnlineData{Slots: 1, Incarnation: "d1"}) // no gossip for d
	return h
}

func TestFold(t *testing.T) {
	got := byName(fold(sample().evs))
	b := got["b"]
	if b.State != StateAlive || b.Slots != 4 || b.Queue != 4 || !reflect.DeepEqual(b.Roles, []string{"executor", "orchestrator"}) ||
		b.Version != "v1" || b.Addr != "10.0.0.2:7946" || !b.Draining || b.DrainReason != "kernel upgrade" || b.DrainBy != "operator-x" {
		t.Errorf("b = %+v", b)
	}
	c := got["c"]
	if c.State != StateDead || c.Reason != "suspicion timed out" || !c.Since.Equal(t0.Add(8*time.Second)) {
		t.Errorf("c = %+v", c)
	}
	d := got["d"]
	if d.State != "" || d.Slots != 1 || !reflect.DeepEqual(d.Roles, []string{"executor"}) {
		t.Errorf("d = %+v", d)
	}
	if len(got) != 3 {
		t.Errorf("%d nodes, want 3", len(got))
	}
}

func TestDrainEndsWithANewProcess(t *testing.T) {
	h := sample()
	h.member(event.NodeLeft, 5, event.NodeData{Node: "b", Incarnation: "b1"})
	n := fold(h.evs)
	if b := byName(n)["b"]; b.State != StateLeft || !b.Draining {
		t.Fatalf("b = %+v, want left and draining", b)
	}
	h.member(event.NodeJoined, 5, event.NodeData{Node: "b", Incarnation: "b2", Slots: 8})
	if b := byName(fold(h.evs))["b"]; b.State != StateAlive || b.Draining || b.Incarnation != "b2" || b.Slots != 8 {
		t.Fatalf("b = %+v, want alive, not draining, incarnation b2", b)
	}
	// The executor's own announcement of a new process ends it too.
	h = sample()
	h.add(event.ExecutorOnline, "b", event.ExecutorOnlineData{Slots: 4, Incarnation: "b9"})
	if b := byName(fold(h.evs))["b"]; b.Draining {
		t.Fatalf("b = %+v, want not draining", b)
	}
}

func TestListIsPublishedBySettled(t *testing.T) {
	n := New(quiet())
	for _, ev := range sample().evs {
		n.Fold(ev)
	}
	if len(n.List()) != 0 {
		t.Fatal("List shows a batch before Settled")
	}
	n.Settled(false)
	if len(n.List()) != 3 {
		t.Fatalf("List = %+v", n.List())
	}
}

func TestBadEventsAreIgnored(t *testing.T) {
	h := &history{}
	h.evs = append(h.evs, event.Event{Seq: 1, Type: event.NodeJoined, Data: json.RawMessage(`{"node":5}`)})
	h.member(event.NodeJoined, 0, event.NodeData{}) // no node
	h.add(event.NodeDrain, "op", event.NodeDrainData{})
	if got := fold(h.evs).List(); len(got) != 0 {
		t.Fatalf("List = %+v", got)
	}
}

func TestModelIsBounded(t *testing.T) {
	h := &history{}
	h.member(event.NodeJoined, 0, event.NodeData{Node: "keep-alive", Incarnation: "1"})
	h.member(event.NodeJoined, 0, event.NodeData{Node: "old-dead", Incarnation: "1"})
	h.member(event.NodeFailed, 0, event.NodeData{Node: "old-dead", Incarnation: "1"})
	for i := range MaxNodes - 2 {
		h.member(event.NodeJoined, 0, event.NodeData{Node: fmt.Sprint("n", i), Incarnation: "1"})
	}
	n := fold(h.evs)
	if len(n.List()) != MaxNodes {
		t.Fatalf("%d nodes", len(n.List()))
	}
	h.member(event.NodeJoined, 0, event.NodeData{Node: "newcomer", Incarnation: "1"})
	got := byName(fold(h.evs))
	if len(got) != MaxNodes {
		t.Fatalf("%d nodes, want %d", len(got), MaxNodes)
	}
	if _, ok := got["old-dead"]; ok {
		t.Error("the dead node was kept over a live one")
	}
	if _, ok := got["keep-alive"]; !ok || got["newcomer"].State != StateAlive {
		t.Error("a live node was dropped")
	}
}

// Folding from zero and restoring a snapshot taken anywhere, then folding
// the rest, give one model.
func TestSnapshotRestoreGivesTheSameModel(t *testing.T) {
	h := sample()
	h.member(event.NodeJoined, 5, event.NodeData{Node: "b", Incarnation: "b2"})
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b", Alarm: event.AlarmNoSpace, Check: "disk"})
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b", Alarm: event.AlarmClockSkew, Check: "clock"})
	h.add(event.AlarmCleared, "b", event.AlarmData{Node: "b", Alarm: event.AlarmNoSpace, Check: "disk"})
	want := fold(h.evs).List()
	if len(byName(fold(h.evs))["b"].Alarms) != 1 {
		t.Fatalf("sample: alarms of b %+v", byName(fold(h.evs))["b"].Alarms)
	}
	for cut := range len(h.evs) + 1 {
		first := fold(h.evs[:cut])
		seq, data, err := first.Snapshot()
		if err != nil || seq != uint64(cut) {
			t.Fatalf("cut %d: Snapshot = %d, %v", cut, seq, err)
		}
		n := New(quiet())
		if err := n.Restore(data); err != nil {
			t.Fatalf("cut %d: Restore: %v", cut, err)
		}
		for _, ev := range h.evs[cut:] {
			n.Fold(ev)
		}
		n.Settled(true)
		if !reflect.DeepEqual(n.List(), want) {
			t.Errorf("cut %d: restored and folded\n%+v\nwant\n%+v", cut, n.List(), want)
		}
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	n := fold(sample().evs)
	before := n.List()
	for _, tc := range []struct{ data, want string }{
		{`{`, "unmarshal"},
		{`{"version":3}`, "unsupported snapshot version"},
		{`{"version":2,"nodes":[{"name":"x","alarms":[{"node":"x"}]}]}`, "alarms unnamed"},
		{`{"version":2,"nodes":[{"name":"x","alarms":[{"node":"y","alarm":"NOSPACE"}]}]}`, "about another node"},
		{`{"version":2,"nodes":[{"name":"x","alarms":[{"node":"x","alarm":"NOSPACE"},{"node":"x","alarm":"CORRUPT"}]}]}`, "out of order"},
		{`{"version":1,"nodes":[{"name":""}]}`, "unnamed or repeated"},
		{`{"version":1,"nodes":[{"name":"x"},{"name":"x"}]}`, "unnamed or repeated"},
	} {
		err := n.Restore([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Restore(%s) = %v, want %q", tc.data, err, tc.want)
		}
	}
	if err := n.Restore([]byte(`{"version":9}`)); !errors.Is(err, ErrSnapshotVersion) {
		t.Errorf("Restore = %v, want ErrSnapshotVersion", err)
	}
	if !reflect.DeepEqual(n.List(), before) {
		t.Error("a refused snapshot changed the model")
	}
}

func TestAlarmsRaisedAndCleared(t *testing.T) {
	h := &history{}
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b", Alarm: event.AlarmNoSpace, Check: "disk", Reason: "2 MB free", Since: t0})
	h.add(event.AlarmRaised, "a", event.AlarmData{Node: "a", Alarm: event.AlarmClockSkew, Check: "clock"})
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b", Alarm: event.AlarmClockSkew, Check: "clock"})
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "c", Alarm: event.AlarmCorrupt})                      // about another node: ignored
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b"})                                                 // no code: ignored
	h.add(event.AlarmCleared, "c", event.AlarmData{Node: "c", Alarm: event.AlarmNoSpace})                     // never raised: nothing
	h.add(event.AlarmRaised, "b", event.AlarmData{Node: "b", Alarm: event.AlarmNoSpace, Reason: "1 MB free"}) // again: the newest says
	n := fold(h.evs)
	var got []string
	for _, a := range n.Alarms() {
		got = append(got, fmt.Sprintf("%s %s %q seq %d", a.Node, a.Alarm, a.Reason, a.Seq))
	}
	want := []string{`a CLOCK_SKEW "" seq 2`, `b CLOCK_SKEW "" seq 3`, `b NOSPACE "1 MB free" seq 7`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("alarms in force:\n%q\nwant\n%q", got, want)
	}
	if _, ok := byName(n)["c"]; ok {
		t.Error("an ignored alarm made a node")
	}
	all := n.Alarms()
	if rest := AlarmsAfter(all, AlarmCursor(all[1])); len(rest) != 1 || rest[0].Alarm != event.AlarmNoSpace {
		t.Errorf("AlarmsAfter the second: %+v", rest)
	}
	if rest := AlarmsAfter(all, ""); len(rest) != 3 {
		t.Errorf("AlarmsAfter(\"\"): %d", len(rest))
	}
	held := n.List()
	h2 := &history{evs: h.evs}
	h2.add(event.AlarmCleared, "b", event.AlarmData{Node: "b", Alarm: event.AlarmNoSpace, Reason: "cause gone"})
	h2.add(event.AlarmCleared, "a", event.AlarmData{Node: "a", Alarm: event.AlarmClockSkew})
	n.Fold(h2.evs[len(h2.evs)-2])
	n.Fold(h2.evs[len(h2.evs)-1])
	n.Settled(true)
	if got := n.Alarms(); len(got) != 1 || got[0].Node != "b" || got[0].Alarm != event.AlarmClockSkew {
		t.Errorf("after two clears: %+v", got)
	}
	if byName(n)["a"].Alarms != nil {
		t.Errorf("a node with no alarm left: %+v", byName(n)["a"].Alarms)
	}
	// A list published before is not changed by later folds.
	for _, nd := range held {
		if nd.Name == "b" && len(nd.Alarms) != 2 {
			t.Errorf("a published list changed: %+v", nd.Alarms)
		}
	}
}

func TestRestoreReadsAVersion1Snapshot(t *testing.T) {
	n := New(quiet())
	if err := n.Restore([]byte(`{"version":1,"seq":4,"nodes":[{"name":"a","state":"alive","changed":3}]}`)); err != nil {
		t.Fatal(err)
	}
	if got := byName(n)["a"]; got.State != StateAlive || got.Alarms != nil {
		t.Errorf("restored %+v", got)
	}
}
