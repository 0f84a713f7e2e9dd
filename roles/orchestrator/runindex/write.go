package runindex

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// hot is the write side's in-memory state, owned by the ledger's appending
// goroutine: the fold of every record (live runs only) and what the index
// holds of each live run.
type hot struct {
	state *core.State
	live  map[string]*liveRun
	// leader and epoch folded, published by Committed.
	leader string
	epoch  uint64
	// folded counts the records folded since the state was restored.
	folded uint64
	// broken is the error of a failed commit: the state has folded records
	// the ledger does not hold, so the index refuses to go on (reopening
	// the store restores it from its snapshot).
	broken error
	// pending are the runs whose summary and step rows the records
	// indexed since the last Flush changed, in the order they first
	// changed; pendingOf finds them by id.
	pending   []*pendingRun
	pendingOf map[string]*pendingRun
	// buf is where Flush encodes rows (the writer copies them).
	buf []byte
}

// pendingRun is what Flush writes of one run: its summary, and the rows of
// the steps at steps, or of every step when all (a new plan revision).
type pendingRun struct {
	r     *core.Run
	lr    *liveRun
	pos   []byte
	all   bool
	steps []int
}

// liveRun is what the index wrote of a live run: derived from the state,
// except created.
type liveRun struct {
	created int64  // stream time of its goal.submitted, Unix ns
	status  string // the status its s/ key is filed under
	// shown is the status each step's row shows; its length is the number
	// of step rows written.
	shown  []core.StepStatus
	counts map[string]int // steps per shown status
	// gated marks the steps whose open gate has a g/ key; planGated the
	// run whose plan gate has one.
	gated     []bool
	planGated bool
}

func newHot() *hot {
	s := core.NewState()
	s.TrackChanges()
	return &hot{state: s, live: map[string]*liveRun{}, pendingOf: map[string]*pendingRun{}}
}

// Index folds rec and stages the entries it changes: for every run the
// fold changed, its status key if the status moved and its gates' keys;
// its summary and the rows of the steps whose view changed are left to
// Flush, once per batch. With w.Discard() (the ledger replays records
// whose entries are stored) only memory moves.
func (x *Index) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	h := x.hot
	if h.broken != nil {
		return fmt.Errorf("runindex: a failed commit left the index ahead of the ledger; reopen the store: %w", h.broken)
	}
	h.state.Apply(rec.Event)
	h.folded++
	for _, c := range h.state.TakeChanges().Runs {
		if err := h.write(w, c, rec); err != nil {
			return fmt.Errorf("runindex: run %s at %d: %w", c.Run.ID, rec.Event.Seq, err)
		}
	}
	if rec.Event.Type == event.RunRated {
		if err := x.indexRating(w, rec.Event); err != nil {
			return err
		}
	}
	if rec.Event.Type == event.LeaderElected {
		h.leader, h.epoch = h.state.Leader, h.state.Epoch
		if w.Discard() { // already committed
			x.publishLeader(h.leader, h.epoch)
		}
	}
	return nil
}

// write stages what changed of one run.
func (h *hot) write(w *ledger.IndexWriter, c core.RunChange, rec ledger.IndexRecord) error {
	r := c.Run
	lr := h.live[r.ID]
	if lr == nil {
		// Only goal.submitted adds a run: rec is its record.
		lr = &liveRun{created: createdNanos(rec.StreamTime), counts: map[string]int{}}
		h.live[r.ID] = lr
		if err := w.Set(idKey(r.ID), binary.BigEndian.AppendUint64(nil, uint64(lr.created))); err != nil {
			return err
		}
	}
	if c.Evicted {
		delete(h.live, r.ID)
	}
	pos := position(lr.created, r.ID)
	var steps []int // the steps whose rows changed
	var err error
	if c.Plan {
		err = lr.writePlan(w, r, pos)
	} else {
		steps, err = lr.writeSteps(w, r, c.Steps, pos)
	}
	if err != nil {
		return err
	}
	if err := lr.filePlanGate(w, r, pos); err != nil {
		return err
	}
	if err := lr.fileStatus(w, string(r.Status.Wire()), pos); err != nil {
		return err
	}
	if w.Discard() {
		return nil
	}
	p := h.pendingOf[r.ID]
	if p == nil {
		p = &pendingRun{}
		h.pendingOf[r.ID] = p
		h.pending = append(h.pending, p)
	}
	p.r, p.lr, p.pos = r, lr, pos
	switch {
	case c.Plan:
		p.all, p.steps = true, p.steps[:0]
	case !p.all:
		p.steps = append(p.steps, steps...)
	}
	return nil
}

// Flush writes the summary and changed step rows of every run the records
// indexed since the last Flush changed, as the last of them left it. It
// implements ledger.BatchIndexer.
func (x *Index) Flush(w *ledger.IndexWriter) error {
	h := x.hot
	defer h.clearPending()
	if w.Discard() {
		return nil
	}
	for _, p := range h.pending {
		var err error
		if h.buf, err = p.write(w, h.buf); err != nil {
			return fmt.Errorf("runindex: run %s: %w", p.r.ID, err)
		}
	}
	if cap(h.buf) > maxBuf {
		h.buf = nil // a rare large row is not held on to
	}
	return nil
}

// maxBuf bounds the encoding buffer the index keeps between batches.
const maxBuf = 64 << 10

func (h *hot) clearPending() {
	clear(h.pending)
	h.pending = h.pending[:0]
	clear(h.pendingOf)
}

// write stages the run's summary and pending step rows.
// write stages the run's summary and pending step rows, encoded in buf;
// it returns buf for the next run.
func (p *pendingRun) write(w *ledger.IndexWriter, buf []byte) ([]byte, error) {
	r := p.r
	var err error
	if p.all {
		for i := range r.Steps {
			if buf, err = writeStep(w, r, i, buf); err != nil {
				return buf, err
			}
		}
	} else {
		slices.Sort(p.steps)
		for _, i := range slices.Compact(p.steps) {
			if buf, err = writeStep(w, r, i, buf); err != nil {
				return buf, err
			}
		}
	}
	sum := p.lr.summary(r)
	b, err := appendSummary(buf[:0], &sum)
	if err != nil {
		return buf, fmt.Errorf("encode summary: %w", err)
	}
	return b, w.Set(createdKey(p.pos), b)
}

// writePlan files every step of r (a new plan revision; Flush writes
// their rows) and deletes the rows of a longer earlier revision.
func (lr *liveRun) writePlan(w *ledger.IndexWriter, r *core.Run, pos []byte) error {
	for i := len(r.Steps); i < len(lr.shown); i++ {
		if err := w.Delete(stepKey(r.ID, i)); err != nil {
			return err
		}
	}
	for i, g := range lr.gated {
		if g {
			if err := w.Delete(gateKey(pos, i)); err != nil {
				return err
			}
		}
	}
	lr.gated = make([]bool, len(r.Steps))
	lr.shown = slices.Grow(lr.shown[:0], len(r.Steps))[:len(r.Steps)]
	clear(lr.counts)
	for i := range r.Steps {
		lr.shown[i] = r.StepStatus(i)
		lr.counts[lr.shown[i].Wire()]++
		if err := lr.fileGate(w, r, i, pos); err != nil {
			return err
		}
	}
	return nil
}

// writeSteps files the steps at positions (possibly repeated; sorted and
// compacted in place; Flush writes their rows), moves the step counts and
// returns the positions, each once.
func (lr *liveRun) writeSteps(w *ledger.IndexWriter, r *core.Run, positions []int, pos []byte) ([]int, error) {
	slices.Sort(positions)
	positions = slices.Compact(positions)
	for _, i := range positions {
		if s := r.StepStatus(i); s != lr.shown[i] {
			lr.counts[lr.shown[i].Wire()]--
			if lr.counts[lr.shown[i].Wire()] == 0 {
				delete(lr.counts, lr.shown[i].Wire())
			}
			lr.counts[s.Wire()]++
			lr.shown[i] = s
		}
		if err := lr.fileGate(w, r, i, pos); err != nil {
			return nil, err
		}
	}
	return positions, nil
}

// filePlanGate writes the g/ key of the run's open plan gate, or deletes
// the key of one that closed.
func (lr *liveRun) filePlanGate(w *ledger.IndexWriter, r *core.Run, pos []byte) error {
	if r.Gate == nil {
		if !lr.planGated {
			return nil
		}
		lr.planGated = false
		return w.Delete(gateKey(pos, planGatePos))
	}
	lr.planGated = true
	if w.Discard() {
		return nil
	}
	b, err := json.Marshal(planGateView(r))
	if err != nil {
		return fmt.Errorf("encode plan gate: %w", err)
	}
	return w.Set(gateKey(pos, planGatePos), b)
}

// fileGate writes the g/ key of step i's open gate (its view may have
// changed: an approval came), or deletes the key of a gate that closed.
func (lr *liveRun) fileGate(w *ledger.IndexWriter, r *core.Run, i int, pos []byte) error {
	if r.Steps[i].Gate == nil {
		if !lr.gated[i] {
			return nil
		}
		lr.gated[i] = false
		return w.Delete(gateKey(pos, i))
	}
	lr.gated[i] = true
	if w.Discard() {
		return nil
	}
	b, err := json.Marshal(gateView(r, i))
	if err != nil {
		return fmt.Errorf("encode gate of step %d: %w", i, err)
	}
	return w.Set(gateKey(pos, i), b)
}

// fileStatus moves the run's status key when its status changed.
func (lr *liveRun) fileStatus(w *ledger.IndexWriter, status string, pos []byte) error {
	if lr.status == status {
		return nil
	}
	if lr.status != "" {
		if err := w.Delete(statusKey(lr.status, pos)); err != nil {
			return err
		}
	}
	lr.status = status
	return w.Set(statusKey(status, pos), nil)
}

// summary is r's summary as the index lists it: created at its stream time,
// step counts as the rows show them.
func (lr *liveRun) summary(r *core.Run) core.RunSummary {
	s := core.RunSummary{
		ID:         r.ID,
		Goal:       r.Goal,
		Status:     r.Status.Wire(),
		Reason:     r.ShownReason(),
		Revision:   r.Revision,
		Steps:      len(r.Steps),
		StepCounts: lr.counts,
		CreatedAt:  timeOf(lr.created),
		Code:       r.Code.Wire(),
	}
	if !r.FinishedAt.IsZero() {
		s.FinishedAt = new(r.FinishedAt)
	}
	return s
}

// writeStep stages the row of step i, encoded in buf (the writer copies
// it), and returns buf for the next row.
func writeStep(w *ledger.IndexWriter, r *core.Run, i int, buf []byte) ([]byte, error) {
	if w.Discard() {
		return buf, nil
	}
	v := r.StepView(i)
	b, err := appendStepView(buf[:0], &v)
	if err != nil {
		return buf, fmt.Errorf("encode step %d: %w", i, err)
	}
	return b, w.Set(stepKey(r.ID, i), b)
}

// Committed publishes the leader the committed batch folded. After a failed
// commit (or a batch another indexer refused) the in-memory state is ahead
// of the ledger: the index refuses every later record until it is restored.
func (x *Index) Committed(err error) {
	x.hot.clearPending()
	if err != nil {
		x.hot.broken = err
		return
	}
	x.publishLeader(x.hot.leader, x.hot.epoch)
}

func (x *Index) publishLeader(leader string, epoch uint64) {
	x.mu.Lock()
	x.mu.leader, x.mu.epoch = leader, epoch
	x.mu.Unlock()
}

// snapshotVersion is the format of the index's snapshot.
const snapshotVersion = 1

// snapshot is the serialized in-memory state: the orchestrator state (live
// runs) and each live run's created time; the rest is derived.
type snapshot struct {
	Version int              `json:"version"`
	State   json.RawMessage  `json:"state"`
	Created map[string]int64 `json:"created"`
}

// Snapshot returns the in-memory state as of the last record indexed: the
// live runs, small whatever the history.
func (x *Index) Snapshot() ([]byte, error) {
	h := x.hot
	st, err := h.state.MarshalSnapshot()
	if err != nil {
		return nil, fmt.Errorf("runindex: snapshot: %w", err)
	}
	snap := snapshot{Version: snapshotVersion, State: st, Created: make(map[string]int64, len(h.live))}
	for id, lr := range h.live {
		snap.Created[id] = lr.created
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("runindex: snapshot: %w", err)
	}
	return b, nil
}

// Restore replaces the in-memory state with a snapshot (nil: the empty
// state) and publishes its leader.
func (x *Index) Restore(data []byte) error {
	h := newHot()
	if data != nil {
		var snap snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return fmt.Errorf("runindex: restore: %w", err)
		}
		if snap.Version != snapshotVersion {
			return fmt.Errorf("runindex: restore: snapshot version %d, want %d", snap.Version, snapshotVersion)
		}
		s, err := core.UnmarshalSnapshot(snap.State)
		if err != nil {
			return fmt.Errorf("runindex: restore: %w", err)
		}
		if len(snap.Created) != len(s.Runs) {
			return fmt.Errorf("runindex: restore: %d creation times for %d runs", len(snap.Created), len(s.Runs))
		}
		s.TrackChanges()
		h.state = s
		for id, r := range s.Runs {
			created, ok := snap.Created[id]
			if !ok {
				return fmt.Errorf("runindex: restore: run %s has no creation time", id)
			}
			lr := &liveRun{created: created, status: string(r.Status.Wire()), shown: make([]core.StepStatus, len(r.Steps)),
				counts: map[string]int{}, gated: make([]bool, len(r.Steps))}
			for i, st := range r.Steps {
				lr.shown[i] = r.StepStatus(i)
				lr.counts[lr.shown[i].Wire()]++
				lr.gated[i] = st.Gate != nil
			}
			lr.planGated = r.Gate != nil
			h.live[id] = lr
		}
		h.leader, h.epoch = s.Leader, s.Epoch
	}
	x.hot = h
	x.publishLeader(h.leader, h.epoch)
	return nil
}
