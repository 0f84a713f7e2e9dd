package core

import (
	"log/slog"
	"slices"
	"time"
)

// Config are a Core's fixed settings.
type Config struct {
	// Node is the executor's node: only assignments, cancels and drains
	// naming it are acted on.
	Node string
	// Slots is how many attempts may run at once (at least 1); Queue how
	// many accepted attempts may wait beyond them (at least 0).
	Slots, Queue int
	// KeepAlive is how often held messages are touched (AckWait/3).
	KeepAlive time.Duration
	// StallGap is how long the loop may go without a pass before the core
	// assumes the process was stopped and reads the backlog again.
	StallGap time.Duration
	// Epoch is the newest leader epoch recorded before the core began.
	Epoch uint64
	// DrainedSeq is the stream sequence of the newest drain completed
	// (local state): a drain at or below it is not honoured again.
	DrainedSeq uint64
}

// Snapshot is what readers see of a Core: its counters and sizes.
type Snapshot struct {
	// Epoch is the newest leader epoch recorded.
	Epoch uint64
	// Fenced, Held, Refused, Dropped and Stalls are Stats' counters.
	Fenced, Held, Refused, Dropped, Stalls uint64
	// Running counts attempts holding a slot; Queued those accepted and
	// waiting for one (queued, or recorded ahead).
	Running, Queued int
	// Active counts attempts running or reporting their result.
	Active int
	// Draining is set once a drain for this node was read.
	Draining bool
	// Drained is set once the drain completed.
	Drained bool
	// Halted is set once the executor halted or began stopping.
	Halted bool
	// Processed is the newest stream sequence handled.
	Processed uint64
}

// delivery is a message the core holds unacknowledged: an assignment
// message whose attempts are queued, or the drain being honoured.
type delivery struct {
	seq uint64
	// open counts its attempts not yet settled (recorded started or
	// dropped, or run): the message is acknowledged at 0.
	open int
}

// entry is an accepted attempt waiting for a slot.
type entry struct {
	a   Attempt
	key Key
	d   *delivery
	// gone is set once it left the queue; the queue skips it.
	gone bool
	// at is when it was recorded started ahead of a free slot; cancelled
	// says why a cancel came for it meanwhile.
	at        time.Time
	cancelled string
}

// pending is a record action not yet answered.
type pending struct {
	kind  int
	seq   uint64
	start []*entry // recordStart: started when recorded
	ahead []*entry // recordStart: recorded ahead
	drops []*entry // recordDrop: queued attempts dropped
	why   []string
	epoch []uint64
	noops []*entry
}

const (
	recordStart = iota
	recordDrop
	recordEpoch
	recordDrain
	recordNoops
)

// Core is the executor's state machine. Its zero value is not usable: see
// New. It is not safe for concurrent use: one goroutine owns it.
type Core struct {
	cfg   Config
	queue []*entry // arrival order; gone entries are skipped
	n     int      // entries of queue not gone
	byKey map[Key]*entry
	// held are the deliveries held unacknowledged, by stream sequence.
	held map[uint64]*delivery
	// ahead are the attempts recorded started ahead of a free slot: in a
	// record being written (aheadBusy) or, once durable, waiting in
	// prepared for a slot.
	ahead     map[Key]*entry
	prepared  []*entry
	aheadBusy bool
	// running are the attempts holding a slot (recorded or being
	// recorded); active counts them and those reporting a result.
	running map[Key]bool
	active  int
	// killed are the running attempts a cancel killed, with why: should
	// their start record fail, they are dropped, not queued again.
	killed  map[Key]string
	pending map[uint64]*pending
	nextID  uint64

	// holds are the messages delivered after the halt, unread.
	holds         []uint64
	drain         *delivery
	draining      bool // a drain for this node was read (stays set)
	drainBusy     bool
	drained       bool
	halted        bool
	recreating    bool
	backlog       backlog
	alive, keptAt time.Time
	snap          Snapshot
	out           []Action
}

// New returns a core with nothing held.
func New(cfg Config) *Core {
	cfg.Slots = max(cfg.Slots, 1)
	cfg.Queue = max(cfg.Queue, 0)
	return &Core{
		cfg: cfg, byKey: map[Key]*entry{}, held: map[uint64]*delivery{}, ahead: map[Key]*entry{},
		running: map[Key]bool{}, killed: map[Key]string{}, pending: map[uint64]*pending{},
		snap: Snapshot{Epoch: cfg.Epoch},
	}
}

// Capacity is Slots + Queue.
func (c *Core) Capacity() int { return c.cfg.Slots + c.cfg.Queue }

// Halted reports whether the core halted (Halt or Release).
func (c *Core) Halted() bool { return c.halted }

// Snapshot returns the core's counters and sizes now.
func (c *Core) Snapshot() Snapshot {
	s := c.snap
	s.Running, s.Queued, s.Active = len(c.running), c.waiting(), c.active
	s.Draining, s.Drained, s.Halted = c.draining, c.drained, c.halted
	return s
}

// Step hands the core one input and returns the actions to carry out, in
// order. The slice is the caller's: the shell may call Step again (to
// answer a record) while it carries out the actions of an earlier Step.
func (c *Core) Step(in Input) []Action {
	c.out = nil
	switch in := in.(type) {
	case Delivery:
		c.deliver(in)
	case Recorded:
		c.recorded(in)
	case Exited:
		delete(c.running, in.Key)
		delete(c.killed, in.Key)
	case Reported:
		c.active--
	case Tick:
		c.tick(in.Now)
	case Alive:
		c.alive = in.Now
	case Pass:
		c.startReady(in.Now, in.Paused)
		c.checkDrained()
		c.alive = in.Now
	case Begin:
		c.alive, c.keptAt = in.Now, in.Now
		if c.backlog.arm(in.Delivered, in.Pending) {
			c.emit(WatchBacklog{Gen: c.backlog.gen})
		}
	case BacklogRead:
		if c.backlog.caughtUp(in.Gen) {
			c.log(slog.LevelInfo, "backlog read; starting attempts", "queued", c.n)
		}
	case ConsumerLost:
		if !c.halted && !c.recreating {
			c.recreating = true
			c.backlog.rearm()
			c.emit(Recreate{Gen: c.backlog.gen})
		}
	case Recreated:
		c.recreating = false
	case Halt:
		c.halted = true
	case Release:
		c.release()
	}
	return c.out
}

func (c *Core) emit(a Action) { c.out = append(c.out, a) }

func (c *Core) log(level slog.Level, msg string, args ...any) {
	c.emit(Log{Level: level, Msg: msg, Args: args})
}

func (c *Core) record(p *pending) uint64 {
	c.nextID++
	c.pending[c.nextID] = p
	return c.nextID
}

// waiting is how many accepted attempts wait for a slot.
func (c *Core) waiting() int { return c.n + len(c.ahead) }

func (c *Core) enqueue(e *entry) {
	c.queue = append(c.queue, e)
	c.byKey[e.key] = e
	c.n++
}

func (c *Core) peek() *entry {
	for len(c.queue) > 0 && c.queue[0].gone {
		c.queue[0] = nil
		c.queue = c.queue[1:]
	}
	if len(c.queue) == 0 {
		return nil
	}
	return c.queue[0]
}

func (c *Core) remove(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	delete(c.byKey, e.key)
	c.n--
}

// settle counts one attempt of d settled and acknowledges d at the last.
func (c *Core) settle(d *delivery) {
	d.open--
	if d.open == 0 {
		c.emit(Ack{Seq: d.seq})
		delete(c.held, d.seq)
	}
}

func (c *Core) tick(now time.Time) {
	if gap := now.Sub(c.alive); c.cfg.StallGap > 0 && gap > c.cfg.StallGap && !c.halted {
		c.snap.Stalls++
		c.log(slog.LevelWarn, "executor loop did not run for a while (process stopped or starved): reading the consumer's backlog before starting anything",
			"gap", gap.Round(time.Millisecond))
		c.backlog.rearm()
		c.emit(WatchBacklog{Gen: c.backlog.gen})
	}
	if c.cfg.KeepAlive > 0 && now.Sub(c.keptAt) >= c.cfg.KeepAlive {
		c.keptAt = now
		if len(c.held) > 0 {
			s := make([]uint64, 0, len(c.held))
			for seq := range c.held {
				s = append(s, seq)
			}
			slices.Sort(s)
			c.emit(Touch{Seqs: s})
		}
	}
	c.alive = now
}

// deliver acts on one delivery.
func (c *Core) deliver(d Delivery) {
	if c.halted {
		c.snap.Held++
		c.holds = append(c.holds, d.Seq)
		c.emit(Hold{Seq: d.Seq})
		return
	}
	c.handle(d)
	c.snap.Processed = max(c.snap.Processed, d.Seq)
	if c.backlog.seen(d.Seq, d.NumDelivered) {
		c.log(slog.LevelInfo, "backlog read; starting attempts", "queued", c.n)
	}
}

func (c *Core) handle(d Delivery) {
	if c.held[d.Seq] != nil {
		return // delivered again while held: the shell acknowledges the newest delivery
	}
	switch d.Kind {
	case KindRefused:
		c.emit(Term{Seq: d.Seq})
	case KindElect:
		if d.Unavailable {
			return
		}
		if len(d.Epochs) == 0 {
			c.emit(Ack{Seq: d.Seq})
			return
		}
		c.emit(RecordEpochs{ID: c.record(&pending{kind: recordEpoch, seq: d.Seq, epoch: d.Epochs}), Seq: d.Seq, Epochs: d.Epochs})
	case KindDrain:
		c.drainRequested(d)
	case KindAssign:
		if d.Unavailable {
			c.log(slog.LevelError, "assignment: local state unreadable; delivered again later", "stream_seq", d.Seq)
			return
		}
		c.assignments(d)
	case KindCancel:
		if d.Unavailable {
			c.log(slog.LevelError, "cancel: local state unreadable; delivered again later", "stream_seq", d.Seq)
			return
		}
		c.cancels(d)
	default:
		c.emit(Ack{Seq: d.Seq})
	}
}

// assignments queues an assignment message's attempts, or refuses it
// whole when the executor holds Capacity attempts already.
func (c *Core) assignments(d Delivery) {
	del := &delivery{seq: d.Seq}
	var take []*entry
	mine := map[Key]bool{}
	for _, as := range d.Assign {
		if e := c.admit(d, as); e != nil && !mine[e.key] {
			mine[e.key] = true
			e.d = del
			take = append(take, e)
		}
	}
	if len(take) == 0 {
		c.emit(Ack{Seq: d.Seq})
		return
	}
	if held := len(c.running) + c.waiting(); held > 0 && held+len(take) > c.Capacity() {
		c.snap.Refused++
		c.log(slog.LevelDebug, "no room for an assignment; delivered again later", "stream_seq", d.Seq, "attempts", len(take),
			"held", held, "capacity", c.Capacity())
		c.emit(Nak{Seq: d.Seq, Later: true})
		return
	}
	for _, e := range take {
		c.enqueue(e)
	}
	del.open = len(take)
	c.held[d.Seq] = del
}

// admit returns the entry for an assignment, or nil if it is not this
// executor's to run.
func (c *Core) admit(d Delivery, as Assignment) *entry {
	a := as.Data
	if a.Node != c.cfg.Node {
		return nil
	}
	if a.FencedBy(d.Fence) {
		c.snap.Fenced++
		c.log(slog.LevelWarn, "assignment from a deposed leader dropped", "run", as.Run, "step", a.Step.ID, "attempt", a.Attempt,
			"epoch", a.Epoch, "current_epoch", d.Fence, "stream_seq", d.Seq)
		return nil
	}
	k := as.Key()
	if c.byKey[k] != nil || c.ahead[k] != nil || c.running[k] {
		return nil
	}
	if !as.Noop() && as.Recorded != "" {
		c.log(slog.LevelInfo, "assignment already taken or cancelled; not running it", "run", as.Run, "step", a.Step.ID,
			"attempt", a.Attempt, "state", as.Recorded)
		return nil
	}
	return &entry{a: as.Attempt, key: k}
}

// cancels acts on a task.cancel message.
func (c *Core) cancels(d Delivery) {
	p := &pending{kind: recordDrop, seq: d.Seq}
	var recs []Key
	for _, cn := range d.Cancels {
		if cn.Data.Node != c.cfg.Node {
			continue
		}
		if cn.Data.FencedBy(d.Fence) {
			c.snap.Fenced++
			c.log(slog.LevelWarn, "cancel from a deposed leader dropped", "run", cn.Run, "step", cn.Data.Step, "attempt", cn.Data.Attempt,
				"epoch", cn.Data.Epoch, "current_epoch", d.Fence, "stream_seq", d.Seq)
			continue
		}
		k := cn.Key()
		switch {
		case c.running[k]:
			c.log(slog.LevelInfo, "cancelling attempt", "run", cn.Run, "step", cn.Data.Step, "attempt", cn.Data.Attempt,
				"code", cn.Data.Code, "reason", cn.Data.Reason)
			c.killed[k] = cn.Why()
			c.emit(Kill{Key: k, Why: cn.Why()})
		case c.byKey[k] != nil:
			e := c.byKey[k]
			c.remove(e) // it never starts, whatever the record's fate
			p.drops, p.why = append(p.drops, e), append(p.why, cn.Why())
			recs = append(recs, k)
		case c.ahead[k] != nil:
			// Recorded ahead: it never starts — now if its record is
			// durable, else once it is.
			e := c.ahead[k]
			if e.cancelled == "" {
				e.cancelled = cn.Why()
				c.log(slog.LevelInfo, "attempt recorded ahead cancelled before it started", "run", k.Run, "step", k.Step, "attempt", k.Attempt, "reason", e.cancelled)
				if i := slices.Index(c.prepared, e); i >= 0 {
					c.prepared = slices.Delete(c.prepared, i, i+1)
					c.cancelAhead(e)
				}
			}
		case !cn.Recorded:
			c.log(slog.LevelInfo, "cancel for an attempt not received; it will not run", "run", k.Run, "step", k.Step, "attempt", k.Attempt)
			recs = append(recs, k)
		}
	}
	if len(recs) == 0 {
		c.emit(Ack{Seq: d.Seq})
		return
	}
	c.emit(RecordDropped{ID: c.record(p), Attempts: recs})
}

// drainRequested honours a node.drain naming this node.
func (c *Core) drainRequested(d Delivery) {
	var reason string
	mine := false
	for _, dr := range d.Drains {
		if dr.Node == c.cfg.Node {
			mine, reason = true, dr.Reason
		}
	}
	if !mine || c.drain != nil || c.drained || d.Seq <= c.cfg.DrainedSeq {
		c.emit(Ack{Seq: d.Seq})
		return
	}
	c.drain, c.draining = &delivery{seq: d.Seq}, true
	c.held[d.Seq] = c.drain
	c.log(slog.LevelInfo, "drain requested: starting nothing more, finishing what runs", "reason", reason,
		"running", len(c.running), "queued", c.waiting())
}

// checkDrained completes a drain once no attempt is active.
func (c *Core) checkDrained() {
	if c.drain == nil || c.drained || c.drainBusy || c.active > 0 {
		return
	}
	c.drainBusy = true
	c.emit(RecordDrained{ID: c.record(&pending{kind: recordDrain, seq: c.drain.seq}), Seq: c.drain.seq})
}

// startReady starts queued attempts in arrival order while slots are
// free, unless the executor halted, drains, is paused or has not read its
// backlog. A noop runs at once (it takes no slot).
func (c *Core) startReady(now time.Time, paused bool) {
	if c.halted || c.drain != nil || c.drained || c.backlog.armed || paused {
		return
	}
	free := c.cfg.Slots - len(c.running)
	for free > 0 && len(c.prepared) > 0 {
		e := c.prepared[0]
		c.prepared[0] = nil
		c.prepared = c.prepared[1:]
		delete(c.ahead, e.key)
		c.running[e.key] = true
		c.active++
		c.emit(StartRecorded{Attempt: e.a, At: e.at})
		c.settle(e.d)
		free--
	}
	// Once at most half the slots' worth is left recorded ahead, the next
	// attempts are recorded up to Slots ahead, in the same commit as those
	// that start now: under load one fsync records several starts.
	room := 0
	if p := len(c.prepared); !c.aheadBusy && p <= c.cfg.Slots/2 {
		room = c.cfg.Slots - p
	}
	var group, ahead, noops []*entry
	for e := c.peek(); e != nil; e = c.peek() {
		switch {
		case e.a.Noop():
			c.remove(e)
			noops = append(noops, e)
			continue
		case free > 0 && !c.aheadBusy:
			c.remove(e)
			free--
			group = append(group, e)
			continue
		case room > 0:
			c.remove(e)
			room--
			e.at = now
			c.ahead[e.key] = e
			ahead = append(ahead, e)
			continue
		}
		break
	}
	if len(noops) > 0 {
		c.emit(RunNoops{ID: c.record(&pending{kind: recordNoops, noops: noops}), Attempts: attemptsOf(noops)})
	}
	if len(group)+len(ahead) == 0 {
		return
	}
	if len(ahead) > 0 {
		c.aheadBusy = true
	}
	for _, e := range group {
		c.running[e.key] = true
		c.active++
	}
	id := c.record(&pending{kind: recordStart, start: group, ahead: ahead})
	c.emit(RecordStarted{ID: id, Start: attemptsOf(group), Ahead: attemptsOf(ahead), At: now})
}

func attemptsOf(es []*entry) []Attempt {
	if len(es) == 0 {
		return nil
	}
	out := make([]Attempt, len(es))
	for i, e := range es {
		out[i] = e.a
	}
	return out
}

// cancelAhead reports an attempt recorded ahead and cancelled before it
// started: its record says it may have started, so it is answered (and
// recorded finished) rather than forgotten.
func (c *Core) cancelAhead(e *entry) {
	delete(c.ahead, e.key)
	c.snap.Dropped++
	c.settle(e.d)
	c.active++
	c.emit(CancelledBeforeStart{Attempt: e.a, Why: e.cancelled, Finish: true})
}

// recorded acts on the answer to a record action.
func (c *Core) recorded(r Recorded) {
	p := c.pending[r.ID]
	if p == nil {
		return
	}
	delete(c.pending, r.ID)
	switch p.kind {
	case recordEpoch:
		if r.Err != nil {
			c.log(slog.LevelError, "record leader election", "stream_seq", p.seq, "err", r.Err)
			return // not acknowledged
		}
		for _, ep := range p.epoch {
			c.snap.Epoch = max(c.snap.Epoch, ep)
		}
		c.emit(Ack{Seq: p.seq})
	case recordDrop:
		if r.Err != nil {
			c.log(slog.LevelError, "record cancelled attempts", "stream_seq", p.seq, "err", r.Err)
			if !r.Halt && p.seq != 0 {
				c.requeue(p.drops) // the cancel is delivered again after AckWait
			}
			// Drops of a failed start record stay held, unqueued: their
			// cancel was acknowledged, so they start in no life of this
			// executor; Release gives their messages back.
			return
		}
		for i, e := range p.drops {
			c.snap.Dropped++
			c.log(slog.LevelInfo, "queued attempt cancelled before it started", "run", e.key.Run, "step", e.key.Step, "attempt", e.key.Attempt, "reason", p.why[i])
			c.emit(CancelledBeforeStart{Attempt: e.a, Why: p.why[i]})
			c.settle(e.d)
		}
		if p.seq != 0 { // 0: drops of a failed start record (see started)
			c.emit(Ack{Seq: p.seq})
		}
	case recordNoops:
		if r.Err != nil {
			// Their messages stay unacknowledged (given back at Release).
			c.log(slog.LevelError, "emit noop results", "steps", len(p.noops), "err", r.Err)
			return
		}
		for _, e := range p.noops {
			c.settle(e.d)
		}
	case recordDrain:
		if r.Err != nil {
			c.log(slog.LevelError, "record the drain completed", "stream_seq", p.seq, "err", r.Err)
		}
		c.emit(DoubleAck{Seq: p.seq})
		delete(c.held, p.seq)
		c.drain, c.drainBusy, c.drained = nil, false, true
		c.log(slog.LevelInfo, "drained: nothing runs and nothing more starts; the node may stop", "queued_unstarted", c.waiting())
		c.emit(Drained{})
	case recordStart:
		c.started(p, r)
	}
}

// started settles a start record: on success the started attempts'
// messages are acknowledged once complete and the attempts recorded ahead
// wait for a slot; on a failure their slots free, and unless the executor
// halted they are queued again, first.
func (c *Core) started(p *pending, r Recorded) {
	if len(p.ahead) > 0 {
		c.aheadBusy = false
	}
	if r.Err == nil {
		for _, e := range p.start {
			c.settle(e.d)
		}
		for _, e := range p.ahead {
			if e.cancelled != "" {
				c.cancelAhead(e)
				continue
			}
			c.prepared = append(c.prepared, e)
		}
		return
	}
	for _, e := range p.start {
		delete(c.running, e.key)
		c.active--
	}
	for _, e := range p.ahead {
		delete(c.ahead, e.key)
	}
	if r.Halt || c.halted {
		for _, e := range p.start {
			delete(c.killed, e.key)
		}
		return
	}
	// Queued again, first — except those a cancel came for while the
	// record was written: the cancel was acknowledged, so they are
	// dropped now (recorded, reported cancelled before they started).
	var again []*entry
	drop := &pending{kind: recordDrop}
	for _, e := range p.start {
		why, killed := c.killed[e.key]
		delete(c.killed, e.key)
		if killed {
			drop.drops, drop.why = append(drop.drops, e), append(drop.why, why)
			continue
		}
		again = append(again, e)
	}
	for _, e := range p.ahead {
		if e.cancelled != "" {
			drop.drops, drop.why = append(drop.drops, e), append(drop.why, e.cancelled)
			continue
		}
		again = append(again, e)
	}
	c.requeue(again)
	if len(drop.drops) > 0 {
		ks := make([]Key, len(drop.drops))
		for i, e := range drop.drops {
			ks[i] = e.key
		}
		c.emit(RecordDropped{ID: c.record(drop), Attempts: ks})
	}
}

// requeue puts entries back at the head of the queue.
func (c *Core) requeue(es []*entry) {
	for _, e := range es {
		e.gone, e.cancelled = false, ""
		c.byKey[e.key] = e
		c.n++
	}
	c.queue = append(slices.Clone(es), c.queue...)
}

// release forgets the attempts recorded ahead that did not start and
// gives every held message back.
func (c *Core) release() {
	c.halted = true
	if len(c.prepared) > 0 {
		ks := make([]Key, len(c.prepared))
		for i, e := range c.prepared {
			delete(c.ahead, e.key)
			ks[i] = e.key
		}
		c.prepared = nil
		c.emit(Forget{Attempts: ks})
	}
	seqs := make([]uint64, 0, len(c.held))
	for seq := range c.held {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		c.snap.Held++
		c.emit(Nak{Seq: seq})
	}
	for _, seq := range c.holds {
		c.emit(Nak{Seq: seq})
	}
	clear(c.held)
	c.holds = nil
	c.drain = nil
}
