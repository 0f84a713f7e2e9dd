package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/ui/layout"
)

// Live streams. Each page has one Server-Sent Events stream. A stream
// sends state, not a log of changes: what it holds for a client is the
// last state it sent (bounded by the page's size), and it sends the diff
// between that and the newest. A client that reads slowly therefore
// skips intermediate states instead of queueing them, and a client that
// does not read at all is cut off by the write deadline; it reconnects and
// gets the whole state again ("resync" when the plan changed under it).
const (
	// writeTimeout bounds one frame's write to a client.
	writeTimeout = 10 * time.Second
	// keepAlive is how often an idle stream sends a comment.
	keepAlive = 15 * time.Second
	// pollEvery is how often a stream looks when the source has no
	// change notification.
	pollEvery = time.Second
	// auditWait is one long-poll of the audit stream.
	auditWait = 20 * time.Second
	// auditBatch bounds the events one long-poll answer brings.
	auditBatch = 200
)

// sse writes one event stream.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) (*sse, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w)}
	// A cut stream comes back within a second.
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return nil, fmt.Errorf("web: stream: %w", err)
	}
	return e, e.flush()
}

func (e *sse) flush() error {
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := e.rc.Flush(); err != nil {
		return fmt.Errorf("web: stream: %w", err)
	}
	return nil
}

// send writes one event; data is JSON-encoded (one line: no newline can
// break the frame).
func (e *sse) send(id, name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("web: stream: %w", err)
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + id + "\n")
	}
	sb.WriteString("event: " + name + "\ndata: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	if _, err := e.w.Write([]byte(sb.String())); err != nil {
		return fmt.Errorf("web: stream: %w", err)
	}
	return e.flush()
}

func (e *sse) comment() error {
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := e.w.Write([]byte(": keep-alive\n\n")); err != nil {
		return fmt.Errorf("web: stream: %w", err)
	}
	return e.flush()
}

// streamCtx ends when the request does or the server closes.
func (s *Server) streamCtx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// wake returns a channel that fires at the source's next change, or after
// pollEvery without change notifications.
func (s *Server) wake() (<-chan struct{}, func()) {
	if s.src.Changed != nil {
		return s.src.Changed(), func() {}
	}
	ch := make(chan struct{})
	t := time.AfterFunc(pollEvery, func() { close(ch) })
	return ch, func() { t.Stop() }
}

// runState is the run page's header, as its stream sends it.
type runState struct {
	Status string `json:"status"`
	Done   int    `json:"done"`
	Steps  int    `json:"steps"`
	Reason string `json:"reason,omitempty"`
}

// snapshot is one reading of a run, shared by every stream of its page.
type snapshot struct {
	revision int
	run      runState
	nodes    map[string]nodeState
	// tl are the timeline's rows, tlHidden the started steps it leaves
	// out, now when the reading was made (Unix ms: the page grows the
	// running bars from it).
	tl       map[string]tlState
	tlHidden int
	now      int64
	err      string
}

// hub shares one reader per run page (run and drawing) among its streams:
// ten dashboards on one run cost one reading per change.
type hub struct {
	s     *Server
	frame time.Duration
	mu    sync.Mutex
	runs  map[hubKey]*watch
}

type hubKey struct {
	run    string
	full   bool
	expand string
}

// watch reads one run while someone watches it.
type watch struct {
	subs   map[chan *snapshot]struct{}
	cancel context.CancelFunc
	last   *snapshot
}

func newHub(s *Server, frame time.Duration) *hub {
	return &hub{s: s, frame: frame, runs: map[hubKey]*watch{}}
}

// subscribe returns a channel that always holds the newest snapshot not
// yet taken (one slot: older ones are dropped), and the way to leave.
func (h *hub) subscribe(k hubKey) (<-chan *snapshot, func()) {
	ch := make(chan *snapshot, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.runs[k]
	if !ok {
		ctx, cancel := context.WithCancel(h.s.ctx)
		w = &watch{subs: map[chan *snapshot]struct{}{}, cancel: cancel}
		h.runs[k] = w
		h.s.wg.Add(1)
		go func() {
			defer h.s.wg.Done()
			h.read(ctx, k, w)
		}()
	}
	w.subs[ch] = struct{}{}
	if w.last != nil {
		ch <- w.last
	}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(w.subs, ch)
		if len(w.subs) == 0 {
			w.cancel()
			delete(h.runs, k)
		}
	}
}

// publish hands snap to every subscriber, replacing what one has not
// taken yet.
func (h *hub) publish(w *watch, snap *snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.last = snap
	for ch := range w.subs {
		select {
		case <-ch:
		default:
		}
		ch <- snap
	}
}

// read reads the run at most once a frame, when the source changed.
func (h *hub) read(ctx context.Context, k hubKey, w *watch) {
	var plan *planRev // the current revision's plan, read once
	for {
		start := time.Now()
		// Armed before the read: a change during it wakes the next one.
		wake, stop := h.s.wake()
		var snap *snapshot
		snap, plan = h.s.snapshot(ctx, k, plan)
		h.publish(w, snap)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-wake:
		}
		stop()
		if d := h.frame - time.Since(start); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// snapshot reads the run's state as its page draws it. plan is the plan
// read last time: it is read again only when the run's revision moved.
func (s *Server) snapshot(ctx context.Context, k hubKey, plan *planRev) (*snapshot, *planRev) {
	sum, steps, err := s.readRun(ctx, k.run)
	if err != nil {
		return &snapshot{err: err.Error()}, plan
	}
	snap := &snapshot{revision: sum.Revision, run: runState{Status: string(sum.Status), Done: apiwire.Done(sum), Steps: sum.Steps, Reason: sum.Reason}}
	if plan != nil && plan.Revision != sum.Revision {
		plan = nil
	}
	if plan == nil && sum.Revision > 0 {
		var err error
		if plan, err = s.readPlan(ctx, sum.ID, sum.Revision); err != nil {
			return &snapshot{err: err.Error()}, nil
		}
	}
	ps := planSteps(plan, steps)
	l, err := s.layoutOf(sum.ID, plan, ps, k.full || len(ps) <= layout.DefaultThreshold, k.expand)
	if err != nil {
		return &snapshot{err: err.Error()}, plan
	}
	status := make(map[string]string, len(steps))
	for _, st := range steps {
		status[st.ID] = st.Status
	}
	snap.nodes = nodeStates(l, status)
	snap.tl, snap.tlHidden = timelineStates(steps)
	snap.now = s.now().UnixMilli()
	return snap, plan
}

// readPlan reads the plan of one revision of run (nil: none proposed):
// the plan its goal carries (revision 1, goalPlanRev) or the first
// plan.proposed of that revision, reading the run's events from
// the oldest only as far as it, one match a page — not every event of a
// long run, as readPlans does to list every revision.
func (s *Server) readPlan(ctx context.Context, run string, revision int) (*planRev, error) {
	// plan.accepted is asked for too, though not used: a page of one
	// ends where the node meets the next match, and a plan's acceptance
	// follows it closely.
	req := apiwire.AuditRequest{Run: run, Types: []string{string(event.GoalSubmitted), string(event.PlanProposed), string(event.PlanAccepted)}, Limit: 1}
	for {
		page, err := s.src.Audit(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			var l apiwire.AuditLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, fmt.Errorf("web: run %s: an audit line: %w", run, err)
			}
			if event.Type(l.Type) == event.GoalSubmitted && revision == 1 {
				if r := goalPlanRev(l); r != nil {
					return r, nil // planned from its goal (goalPlanRev)
				}
			}
			if event.Type(l.Type) != event.PlanProposed {
				continue
			}
			var p event.PlanProposedData
			if err := json.Unmarshal(l.Data, &p); err != nil {
				return nil, fmt.Errorf("web: plan.proposed at seq %d: %w", l.Seq, err)
			}
			if p.Revision == revision {
				return &planRev{Revision: p.Revision, Source: p.Source, Rationale: p.Rationale, Plan: p.Plan, Seq: l.Seq}, nil
			}
		}
		if page.End || page.Next == "" || ctx.Err() != nil {
			return nil, ctx.Err()
		}
		req.Cursor = page.Next
	}
}

// runFrame is one frame of a run page's stream: the header, and the
// drawn nodes whose state changed.
type runFrame struct {
	Run   runState             `json:"run"`
	Nodes map[string]nodeState `json:"nodes"`
	// TL are the timeline rows that changed, Hidden the started steps
	// it does not draw, Now the server's time of the reading (Unix ms).
	TL     map[string]tlState `json:"tl,omitempty"`
	Hidden int                `json:"tlHidden,omitempty"`
	Now    int64              `json:"now"`
}

func (s *Server) runLive(w http.ResponseWriter, r *http.Request) {
	ctx, done := s.streamCtx(r)
	defer done()
	q := r.URL.Query()
	// The revision the page drew (none: any); 0 is a run not yet planned.
	rev := -1
	if q.Has("rev") {
		n, err := strconv.Atoi(q.Get("rev"))
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("rev %q is not a plan revision", q.Get("rev")), http.StatusBadRequest)
			return
		}
		rev = n
	}
	snaps, leave := s.hub.subscribe(hubKey{run: r.PathValue("id"), full: q.Get("full") == "1", expand: q.Get("expand")})
	defer leave()
	e, err := startSSE(w)
	if err != nil {
		return
	}
	sent := map[string]nodeState{}
	sentTL := map[string]tlState{}
	var header runState
	frame := 0
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ka.C:
			if e.comment() != nil {
				return
			}
		case snap := <-snaps:
			if snap.err != "" {
				if e.send("", "problem", snap.err) != nil {
					return
				}
				continue
			}
			if rev >= 0 && snap.revision != rev {
				// The plan changed: the drawing is another one.
				_ = e.send("", "resync", snap.revision)
				return
			}
			f := runFrame{Run: snap.run, Nodes: map[string]nodeState{}, TL: map[string]tlState{}, Hidden: snap.tlHidden, Now: snap.now}
			for id, st := range snap.nodes {
				if sent[id] != st {
					f.Nodes[id] = st
					sent[id] = st
				}
			}
			for id, st := range snap.tl {
				if sentTL[id] != st {
					f.TL[id] = st
					sentTL[id] = st
				}
			}
			if len(f.Nodes) == 0 && len(f.TL) == 0 && header == snap.run && frame > 0 {
				continue
			}
			header = snap.run
			frame++
			if e.send(fmt.Sprintf("%d.%d", snap.revision, frame), "state", f) != nil {
				return
			}
		}
	}
}

// runsRow is what the runs page's stream sends of one row.
type runsRow struct {
	Status string `json:"s"`
	Done   string `json:"d"`
}

func (s *Server) runsLive(w http.ResponseWriter, r *http.Request) {
	ctx, done := s.streamCtx(r)
	defer done()
	req, err := s.runsRequest(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e, err := startSSE(w)
	if err != nil {
		return
	}
	sent := map[string]runsRow{}
	for first := true; s.runsFrame(ctx, e, req, sent, first); first = false {
	}
}

// runsFrame sends one frame of the runs page's stream, then waits for the
// next change; false ends the stream.
func (s *Server) runsFrame(ctx context.Context, e *sse, req apiwire.RunsListRequest, sent map[string]runsRow, first bool) bool {
	start := time.Now()
	// Armed before the read: a change during it wakes the next one.
	wake, stop := s.wake()
	defer stop()
	rows, _, err := s.listRuns(ctx, req)
	if ctx.Err() != nil {
		return false
	}
	if err == nil && !first && req.Cursor == "" && req.Before == "" {
		// The newest page gained a run: the page reloads to show it.
		for _, row := range rows {
			if _, ok := sent[row.ID]; !ok {
				_ = e.send("", "resync", row.ID)
				return false
			}
		}
	}
	if err == nil {
		diff := map[string]runsRow{}
		for _, row := range rows {
			v := runsRow{Status: string(row.Status), Done: fmt.Sprintf("%d/%d", row.Done, row.Steps)}
			if sent[row.ID] != v {
				diff[row.ID], sent[row.ID] = v, v
			}
		}
		if len(diff) > 0 && e.send("", "runs", diff) != nil || len(diff) == 0 && e.comment() != nil {
			return false
		}
	}
	t := time.NewTimer(keepAlive)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	if d := s.hub.frame*4 - time.Since(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// auditRow is what the audit stream sends of one event.
type auditRow struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	Run  string    `json:"run,omitempty"`
	Node string    `json:"node"`
	Time time.Time `json:"time"`
}

// auditLive sends the events after ?after= (or the Last-Event-ID of a
// reconnecting browser, which wins) that the page's filter selects, each
// with its seq as the event id: a reconnect misses none.
func (s *Server) auditLive(w http.ResponseWriter, r *http.Request) {
	ctx, done := s.streamCtx(r)
	defer done()
	q := r.URL.Query()
	f, err := readAuditFilter(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	from := q.Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		from = id
	}
	after, err := strconv.ParseUint(from, 10, 64)
	if err != nil && from != "" {
		http.Error(w, fmt.Sprintf("after %q is not a seq", from), http.StatusBadRequest)
		return
	}
	e, err := startSSE(w)
	if err != nil {
		return
	}
	req := apiwire.AuditRequest{After: after, Run: f.Run, Types: f.Types, Limit: auditBatch, Wait: auditWait}
	for ctx.Err() == nil {
		page, err := s.src.Audit(ctx, req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if e.send("", "problem", err.Error()) != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
			continue
		}
		for _, raw := range page.Items {
			var l apiwire.AuditLine
			if json.Unmarshal(raw, &l) != nil {
				continue
			}
			if f.Node != "" && l.Node != f.Node {
				continue
			}
			row := auditRow{Seq: l.Seq, Type: l.Type, Run: l.Run, Node: l.Node, Time: l.Time}
			if e.send(strconv.FormatUint(l.Seq, 10), "audit", row) != nil {
				return
			}
		}
		if len(page.Items) == 0 && e.comment() != nil {
			return
		}
		if page.Next != "" {
			req.After, req.Cursor = 0, page.Next
		}
	}
}
