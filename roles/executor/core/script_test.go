package core

// script interprets the golden scripts' commands against a Core driven by
// a sim (the real local state on a memory file system; no NATS server).
// Time starts at t0 and moves only with @t=<duration> (an offset from t0).
// Record actions are answered at once — their answers printed indented
// beneath them — except RecordStarted, answered by commit or fail.
//
// Commands (arguments in [] are optional):
//
//	config [node=N] [slots=N] [queue=N] [drained=SEQ] [keepalive=D]   a new executor,
//	                    with a new local state (default n1, 1 slot, queue 1)
//	restart [slots=N] [queue=N]   a new core over the same local state (a
//	                    crash and a start): prints the attempts left
//	                    unfinished, which the shell reports interrupted
//	begin [delivered=SEQ] [pending=N]   the consumer's position at start
//	assign SEQ KEY[:noop]... [epoch=E] [node=N] [n=DELIVERIES]
//	cancel SEQ KEY... [epoch=E] [node=N] [code=C]
//	elect SEQ EPOCH
//	drain SEQ NODE
//	other SEQ | refused SEQ | unavailable SEQ
//	tick [@t=D]         Tick
//	pass [@t=D] [paused]   Pass
//	commit [ID]         answer start records (all waiting, oldest first)
//	fail ID [sync]      fail a start record (sync: a failed sync)
//	failnext            the next record answered at once fails to sync
//	exit KEY            its process ends: Exited, then Reported
//	exited KEY | reported KEY
//	finish              report the attempts cancelled after their record
//	backlogread GEN | lost | recreated | halt | release
//	state               the core's snapshot
//	record KEY          the local state's record of KEY
//	auto on|off         answer start records at once

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

type script struct {
	t   *testing.T
	sim *sim
}

func newScript(t *testing.T) *script {
	return &script{t: t, sim: newSim(t, defaultConfig())}
}

func defaultConfig() Config {
	return Config{Node: "n1", Slots: 1, Queue: 1, KeepAlive: 10 * time.Second, StallGap: time.Second}
}

// args splits a command's words into positional ones and key=value ones
// (and @t=D, which moves the clock).
func (sc *script) args(words []string) ([]string, map[string]string) {
	var pos []string
	kv := map[string]string{}
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok {
			if k == "@t" {
				d, err := time.ParseDuration(v)
				if err != nil {
					sc.t.Fatalf("@t=%s: %v", v, err)
				}
				sc.sim.now = t0.Add(d)
				continue
			}
			kv[k] = v
			continue
		}
		pos = append(pos, w)
	}
	return pos, kv
}

func (sc *script) num(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		sc.t.Fatalf("number %q: %v", s, err)
	}
	return n
}

func (sc *script) key(s string) Key {
	k, err := parseKey(s)
	if err != nil {
		sc.t.Fatal(err)
	}
	return k
}

func (sc *script) exec(t *testing.T, cmd string, _ []string) []string {
	words := strings.Fields(cmd)
	pos, kv := sc.args(words[1:])
	s := sc.sim
	intOr := func(k string, d int) int {
		if v, ok := kv[k]; ok {
			return int(sc.num(v))
		}
		return d
	}
	epoch := uint64(intOr("epoch", 0))
	node := kv["node"]
	if node == "" {
		node = s.cfg.Node
	}
	var out []string
	switch words[0] {
	case "config":
		cfg := defaultConfig()
		if v := kv["node"]; v != "" {
			cfg.Node = v
		}
		cfg.Slots, cfg.Queue, cfg.DrainedSeq = intOr("slots", 1), intOr("queue", 1), uint64(intOr("drained", 0))
		if v := kv["keepalive"]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("keepalive=%s: %v", v, err)
			}
			cfg.KeepAlive = d
		}
		sc.sim = newSim(t, cfg)
		out = []string{fmt.Sprintf("node=%s slots=%d queue=%d", cfg.Node, cfg.Slots, cfg.Queue)}
	case "restart":
		cfg := s.cfg
		cfg.Slots, cfg.Queue = intOr("slots", cfg.Slots), intOr("queue", cfg.Queue)
		ep, err := s.store.Epoch()
		if err != nil {
			t.Fatal(err)
		}
		dr, err := s.store.Drained()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Epoch, cfg.DrainedSeq = ep, dr
		left, err := s.store.Unfinished()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range left {
			out = append(out, fmt.Sprintf("interrupted %s/%s/%d", a.Run, a.Step, a.Attempt))
			if err := s.store.MarkFinished(a.Run, a.Step, a.Attempt); err != nil {
				t.Fatal(err)
			}
		}
		fresh := newSim(t, cfg)
		fresh.store, fresh.now = s.store, s.now
		sc.sim = fresh
		out = append(out, fmt.Sprintf("epoch=%d drained=%d", ep, dr))
	case "begin":
		out = s.step(Begin{Now: s.now, Delivered: uint64(intOr("delivered", 0)), Pending: uint64(intOr("pending", 0))})
	case "assign":
		d := Delivery{Seq: sc.num(pos[0]), Kind: KindAssign, NumDelivered: uint64(intOr("n", 1))}
		for _, w := range pos[1:] {
			ks, noop := strings.CutSuffix(w, ":noop")
			d.Assign = append(d.Assign, assignment(sc.key(ks), node, epoch, noop))
		}
		out = s.deliver(d)
	case "cancel":
		d := Delivery{Seq: sc.num(pos[0]), Kind: KindCancel, NumDelivered: uint64(intOr("n", 1))}
		for _, w := range pos[1:] {
			d.Cancels = append(d.Cancels, cancelOf(sc.key(w), node, epoch, kv["code"]))
		}
		out = s.deliver(d)
	case "elect":
		out = s.deliver(Delivery{Seq: sc.num(pos[0]), Kind: KindElect, Epochs: []uint64{sc.num(pos[1])}})
	case "drain":
		out = s.deliver(Delivery{Seq: sc.num(pos[0]), Kind: KindDrain, Drains: []event.NodeDrainData{{Node: pos[1]}}})
	case "other":
		out = s.deliver(Delivery{Seq: sc.num(pos[0]), Kind: KindOther})
	case "refused":
		out = s.deliver(Delivery{Seq: sc.num(pos[0]), Kind: KindRefused})
	case "unavailable":
		out = s.deliver(Delivery{Seq: sc.num(pos[0]), Kind: KindAssign, Unavailable: true})
	case "tick":
		out = s.step(Tick{Now: s.now})
	case "pass":
		_, paused := kv["paused"]
		paused = paused || slices.Contains(pos, "paused")
		out = s.step(Pass{Now: s.now, Paused: paused})
	case "commit":
		ids := sortedIDs(s.waiting)
		if len(pos) > 0 {
			ids = []uint64{sc.num(pos[0])}
		}
		for _, id := range ids {
			r, ok := s.waiting[id]
			if !ok {
				t.Fatalf("no start record #%d waiting", id)
			}
			out = append(out, s.commit(r)...)
		}
	case "fail":
		id := sc.num(pos[0])
		if _, ok := s.waiting[id]; !ok {
			t.Fatalf("no start record #%d waiting", id)
		}
		delete(s.waiting, id)
		err := error(fmt.Errorf("test: disk says no"))
		if slices.Contains(pos, "sync") {
			err = errSync
		}
		out = s.reply(id, err)
	case "failnext":
		s.failNext = true
	case "exit":
		out = s.exit(sc.key(pos[0]))
	case "exited":
		k := sc.key(pos[0])
		delete(s.running, k)
		out = s.step(Exited{Key: k})
	case "reported":
		out = s.step(Reported{Key: sc.key(pos[0])})
	case "finish":
		for _, k := range s.finishing {
			out = append(out, s.step(Reported{Key: k})...)
		}
		s.finishing = nil
	case "backlogread":
		out = s.step(BacklogRead{Gen: int(sc.num(pos[0]))})
	case "lost":
		out = s.step(ConsumerLost{})
	case "recreated":
		out = s.step(Recreated{})
	case "halt":
		s.halted = true
		out = s.step(Halt{})
	case "release":
		out = s.step(Release{})
	case "auto":
		s.auto = pos[0] == "on"
	case "state":
		n := s.core.Snapshot()
		out = []string{fmt.Sprintf("running=%d queued=%d active=%d epoch=%d fenced=%d refused=%d dropped=%d held=%d stalls=%d draining=%t drained=%t halted=%t",
			n.Running, n.Queued, n.Active, n.Epoch, n.Fenced, n.Refused, n.Dropped, n.Held, n.Stalls, n.Draining, n.Drained, n.Halted)}
	case "record":
		k := sc.key(pos[0])
		rec, ok, err := s.store.Lookup(k.Run, k.Step, k.Attempt)
		switch {
		case err != nil:
			out = []string{"error: " + err.Error()}
		case !ok:
			out = []string{"none"}
		default:
			out = []string{rec.State}
		}
	default:
		t.Fatalf("unknown command %q", words[0])
	}
	if len(out) == 0 {
		out = []string{"ok"}
	}
	return out
}

func sortedIDs(m map[uint64]RecordStarted) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
