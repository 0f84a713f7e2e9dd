package web

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/agentic-dev/agentic/roles/ui/layout"
)

// Sizes of the run page.
const (
	// fullLimit is the number of steps above which the DAG is drawn
	// collapsed unless ?full=1 asks for every step.
	fullLimit = 2000
	// maxTimeline bounds the attempts the timeline draws.
	maxTimeline = 400
	// maxRunSteps bounds the steps a run page reads.
	maxRunSteps = 50_000
)

// runData is a run as the run page shows it: its summary, every step, and
// its plan revisions.
type runData struct {
	Run   apiwire.RunSummary
	Steps []apiwire.Step
	Revs  []planRev
}

// planRev is one plan.proposed of a run.
type planRev struct {
	Revision  int
	Accepted  bool
	Source    string
	Rationale string
	Plan      event.Plan
	Seq       uint64
}

// goalPlanRev is revision 1 of a run whose goal, l, carries its plan
// file's plan, as the orchestrator plans it (plan.FromGoal); nil for any
// other goal. The planner's proposal of it comes later, or never.
func goalPlanRev(l apiwire.AuditLine) *planRev {
	var g event.GoalSubmittedData
	if json.Unmarshal(l.Data, &g) != nil {
		return nil
	}
	p := plan.FromGoal(g)
	if p == nil {
		return nil
	}
	return &planRev{Revision: 1, Source: "file", Plan: *p, Seq: l.Seq}
}

// readRun reads a run's summary and every step, page after page.
func (s *Server) readRun(ctx context.Context, id string) (apiwire.RunSummary, []apiwire.Step, error) {
	d, err := s.src.Runs.Get(ctx, apiwire.RunsGetRequest{ID: id, Limit: apiwire.MaxStepsPage})
	if err != nil {
		return apiwire.RunSummary{}, nil, err
	}
	var steps []apiwire.Step
	page := d.Steps
	for page != nil {
		for _, raw := range page.Items {
			var st apiwire.Step
			if err := json.Unmarshal(raw, &st); err != nil {
				return apiwire.RunSummary{}, nil, fmt.Errorf("web: run %s: a step: %w", d.Run.ID, err)
			}
			steps = append(steps, st)
		}
		if page.End || page.Next == "" || len(steps) >= maxRunSteps {
			break
		}
		p, err := s.src.Runs.Steps(ctx, apiwire.RunsStepsRequest{ID: d.Run.ID, Cursor: page.Next, Limit: apiwire.MaxStepsPage})
		if err != nil {
			return apiwire.RunSummary{}, nil, err
		}
		page = &p
	}
	return d.Run, steps, nil
}

// readPlans reads the run's plan revisions from its plan events, as
// agentctl plan show does.
func (s *Server) readPlans(ctx context.Context, run string) ([]planRev, error) {
	var revs []planRev
	accepted := map[int]bool{}
	req := apiwire.AuditRequest{Run: run, Types: []string{string(event.GoalSubmitted), string(event.PlanProposed), string(event.PlanAccepted)}}
	for range 1000 {
		page, err := s.src.Audit(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			var l apiwire.AuditLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, fmt.Errorf("web: run %s: an audit line: %w", run, err)
			}
			switch event.Type(l.Type) {
			case event.GoalSubmitted:
				if r := goalPlanRev(l); r != nil && len(revs) == 0 {
					revs = append(revs, *r)
				}
			case event.PlanProposed:
				var p event.PlanProposedData
				if err := json.Unmarshal(l.Data, &p); err != nil {
					return nil, fmt.Errorf("web: plan.proposed at seq %d: %w", l.Seq, err)
				}
				if slices.ContainsFunc(revs, func(r planRev) bool { return r.Revision == p.Revision }) {
					continue
				}
				revs = append(revs, planRev{Revision: p.Revision, Source: p.Source, Rationale: p.Rationale, Plan: p.Plan, Seq: l.Seq})
			case event.PlanAccepted:
				var p event.PlanAcceptedData
				if json.Unmarshal(l.Data, &p) == nil {
					accepted[p.Revision] = true
				}
			}
		}
		if page.End {
			break
		}
		req.Cursor = page.Next
	}
	for i := range revs {
		revs[i].Accepted = accepted[revs[i].Revision]
	}
	return revs, nil
}

// layoutKey names a cached layout: a plan revision of a run, drawn whole
// or collapsed.
type layoutKey struct {
	run      string
	revision int
	steps    int
	full     bool
	expand   string
}

// dagLayout is a laid out plan revision and the collapse it was made
// from.
type dagLayout struct {
	res       *layout.Result
	collapsed layout.Collapsed
}

// layoutCache keeps the newest layouts; a plan revision never changes, so
// nothing in it goes stale (steps is in the key for a run still planning).
type layoutCache struct {
	mu    sync.Mutex
	max   int
	m     map[layoutKey]*dagLayout
	order []layoutKey
}

func (c *layoutCache) get(k layoutKey, make func() (*dagLayout, error)) (*dagLayout, error) {
	c.mu.Lock()
	if l, ok := c.m[k]; ok {
		c.mu.Unlock()
		return l, nil
	}
	c.mu.Unlock()
	l, err := make()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.m[k] = l
		c.order = append(c.order, k)
		if len(c.order) > c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	return l, nil
}

// planSteps are the steps a DAG draws: the plan revision's when there is
// one, else the steps the run has.
func planSteps(rev *planRev, steps []apiwire.Step) []event.Step {
	if rev != nil {
		return rev.Plan.Steps
	}
	out := make([]event.Step, len(steps))
	for i, st := range steps {
		out[i] = event.Step{ID: st.ID, Title: st.Title, Subgoal: st.Subgoal, Kind: st.Kind, DependsOn: st.DependsOn}
	}
	return out
}

// graphOf is the plan's DAG: depends_on edges, and branch edges labelled
// by their outcome (a branch target also depends on its source; the
// branch edge stands for both).
func graphOf(steps []event.Step) layout.Graph {
	var g layout.Graph
	known := make(map[string]bool, len(steps))
	for _, st := range steps {
		known[st.ID] = true
		g.Nodes = append(g.Nodes, layout.Node{ID: st.ID, Group: st.Subgoal})
	}
	branchTo := map[[2]string]bool{}
	for _, st := range steps {
		for _, b := range st.Next {
			k := [2]string{st.ID, b.To}
			if known[b.To] && !branchTo[k] {
				branchTo[k] = true
				g.Edges = append(g.Edges, layout.Edge{From: st.ID, To: b.To, Kind: layout.EdgeBranch, Label: string(b.On)})
			}
		}
	}
	for _, st := range steps {
		for _, d := range st.DependsOn {
			if known[d] && !branchTo[[2]string{d, st.ID}] {
				g.Edges = append(g.Edges, layout.Edge{From: d, To: st.ID, Kind: layout.EdgeDepends})
			}
		}
	}
	return g
}

// shapeOf is the key fan-out is grouped by: the kind and, for shell steps,
// the memory role's command shapes.
func shapeOf(st event.Step) string {
	if st.Kind == event.KindShell || st.Kind == "" {
		return "shell:" + strings.Join(memory.Shapes(st.Run), ";")
	}
	return string(st.Kind)
}

// layoutOf lays out a plan revision: every step when full, else with
// fan-out grouped, except the group named expand (a collapsed node's id,
// drawn step by step).
func (s *Server) layoutOf(run string, rev *planRev, steps []event.Step, full bool, expand string) (*dagLayout, error) {
	if full {
		expand = ""
	}
	k := layoutKey{run: run, steps: len(steps), full: full, expand: expand}
	if rev != nil {
		k.revision = rev.Revision
	}
	return s.layouts.get(k, func() (*dagLayout, error) {
		g := graphOf(steps)
		threshold := layout.DefaultThreshold
		if full {
			threshold = len(steps)
		}
		shape := make(map[string]string, len(steps))
		for _, st := range steps {
			shape[st.ID] = shapeOf(st)
		}
		c, err := layout.Collapse(g, shape, threshold)
		if err != nil {
			return nil, fmt.Errorf("web: run %s: %w", run, err)
		}
		if ms, ok := c.Members[expand]; ok {
			// The expanded group's steps are drawn one by one.
			keep := make(map[string]bool, len(ms))
			for _, m := range ms {
				keep[m] = true
			}
			if c, err = layout.CollapseBy(g, shape, layout.Grouping{Threshold: threshold, Keep: keep}); err != nil {
				return nil, fmt.Errorf("web: run %s: %w", run, err)
			}
		}
		res, err := layout.Layout(c.Graph, layout.Options{})
		if err != nil {
			return nil, fmt.Errorf("web: run %s: %w", run, err)
		}
		return &dagLayout{res: res, collapsed: c}, nil
	})
}

// dagNode is one drawn node: a step, or a group of steps with counts.
type dagNode struct {
	layout.Pos
	Label   string
	Status  string
	Members int
	// First and Chain are the first and last steps of a chain drawn as
	// one node ("" for none).
	First, Chain string
	Counts       string
	Href         string
}

// dagView is what the run page draws.
type dagView struct {
	W, H      int
	Nodes     []dagNode
	Lines     []lineView
	Boxes     []boxView
	Collapsed bool
	Total     int
	FullHref  string
	Groups    int
}

type lineView struct {
	layout.Line
	Path   string
	LabelX int
	LabelY int
}

type boxView struct {
	layout.Box
	Title string
}

// stateOf is what the live stream sends of one drawn node: its status
// class and, for a group, its counts.
type nodeState struct {
	Status string `json:"s"`
	Counts string `json:"c,omitempty"`
}

// nodeStates computes each drawn node's state from the steps' statuses.
func nodeStates(l *dagLayout, status map[string]string) map[string]nodeState {
	out := make(map[string]nodeState, len(l.res.Nodes))
	for _, p := range l.res.Nodes {
		ms, grouped := l.collapsed.Members[p.ID]
		if !grouped {
			st := status[p.ID]
			if st == "" {
				st = "planned"
			}
			out[p.ID] = nodeState{Status: st}
			continue
		}
		counts := map[string]int{}
		for _, m := range ms {
			st := status[m]
			if st == "" {
				st = "planned"
			}
			counts[st]++
		}
		out[p.ID] = nodeState{Status: groupStatus(counts), Counts: countText(counts)}
	}
	return out
}

// statusOrder ranks statuses for a group's colour: the most urgent one
// present wins.
var statusOrder = []string{"failed", "denied", "gated", "running", "assigned", "ready", "approved", "edited", "pending", "planned", "cancelled", "skipped", "succeeded"}

func groupStatus(counts map[string]int) string {
	for _, s := range statusOrder {
		if counts[s] > 0 {
			return s
		}
	}
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		return s
	}
	return "planned"
}

func countText(counts map[string]int) string {
	var parts []string
	for _, s := range statusOrder {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(statusOrder, s) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return strings.Join(parts, " · ")
}

func (s *Server) dagView(run string, l *dagLayout, steps []event.Step, status map[string]string, titles map[string]string, full bool) dagView {
	byID := make(map[string]event.Step, len(steps))
	for _, st := range steps {
		byID[st.ID] = st
	}
	states := nodeStates(l, status)
	v := dagView{W: l.res.Width, H: l.res.Height, Total: len(steps), Collapsed: len(l.collapsed.Members) > 0, Groups: len(l.collapsed.Members)}
	for _, p := range l.res.Nodes {
		n := dagNode{Pos: p, Status: states[p.ID].Status, Counts: states[p.ID].Counts}
		if ms, ok := l.collapsed.Members[p.ID]; ok {
			n.Members = len(ms)
			n.Label = fmt.Sprintf("%s ×%d", shortLabel(byID[ms[0]]), len(ms))
			if l.collapsed.Chain[p.ID] {
				n.First, n.Chain = ms[0], ms[len(ms)-1]
				n.Label = fmt.Sprintf("%s ⋯ ×%d", shortLabel(byID[ms[0]]), len(ms))
			}
			n.Href = "/runs/" + url.PathEscape(run) + "?" + url.Values{"expand": {p.ID}}.Encode()
		} else {
			n.Label = shortLabel(byID[p.ID])
			n.Href = "/runs/" + url.PathEscape(run) + "?step=" + url.QueryEscape(p.ID)
		}
		v.Nodes = append(v.Nodes, n)
	}
	for _, ln := range l.res.Lines {
		mid := (ln.X1 + ln.X2) / 2
		v.Lines = append(v.Lines, lineView{Line: ln,
			Path:   fmt.Sprintf("M%d %d C%d %d %d %d %d %d", ln.X1, ln.Y1, mid, ln.Y1, mid, ln.Y2, ln.X2, ln.Y2),
			LabelX: mid, LabelY: (ln.Y1+ln.Y2)/2 - 3})
	}
	for _, b := range l.res.Boxes {
		t := titles[b.Group]
		if t == "" {
			t = b.Group
		}
		v.Boxes = append(v.Boxes, boxView{Box: b, Title: t})
	}
	if v.Collapsed && !full {
		v.FullHref = "/runs/" + url.PathEscape(run) + "?full=1"
	}
	return v
}

// shortLabel is a node's text: its id (the title is in its tooltip).
func shortLabel(st event.Step) string {
	id := st.ID
	if len(id) > 22 {
		id = id[:21] + "…"
	}
	return id
}

// timelineView is the waterfall of attempts. Label, Bar and RowH are its
// geometry, which the page's script uses to place the rows it adds.
type timelineView struct {
	W, H             int
	Rows             []timelineRow
	Start            time.Time
	Span             time.Duration
	Hidden           int
	Label, Bar, RowH int
}

type timelineRow struct {
	Step, Node, Status string
	Y, X, BarW         int
	Started            time.Time
	Duration           time.Duration
	ExitCode           string
	Retries            int
	Running            bool
	Href               string
	// Begin and End are the attempt's start and end in Unix
	// milliseconds (End 0: running), for the script's rescaling.
	Begin, End int64
}

const (
	timelineLabel = 260
	timelineBar   = 640
	timelineRowH  = 20
)

// startedSteps are the steps the timeline draws: those that started, by
// start time, at most maxTimeline; and how many more there are.
func startedSteps(steps []apiwire.Step) ([]apiwire.Step, int) {
	var started []apiwire.Step
	for _, st := range steps {
		if st.StartedAt != nil {
			started = append(started, st)
		}
	}
	sort.SliceStable(started, func(i, j int) bool { return started[i].StartedAt.Before(*started[j].StartedAt) })
	if len(started) > maxTimeline {
		return started[:maxTimeline], len(started) - maxTimeline
	}
	return started, 0
}

// tlState is what the live stream sends of one timeline row: the step's
// latest attempt, its status, node, start and end (Unix milliseconds; 0:
// still running). The page places and sizes the bar itself, so that bars
// grow and rows are added without the server sending every row again.
type tlState struct {
	Status  string `json:"s"`
	Node    string `json:"n,omitempty"`
	Start   int64  `json:"b"`
	End     int64  `json:"e,omitempty"`
	Attempt int    `json:"a"`
	Exit    string `json:"x,omitempty"`
}

// timelineStates are the timeline's rows as the stream sends them, and
// the number of started steps not drawn.
func timelineStates(steps []apiwire.Step) (map[string]tlState, int) {
	started, hidden := startedSteps(steps)
	out := make(map[string]tlState, len(started))
	for _, st := range started {
		ts := tlState{Status: st.Status, Node: st.Node, Start: st.StartedAt.UnixMilli(), Attempt: st.Attempt}
		if st.FinishedAt != nil {
			ts.End = st.FinishedAt.UnixMilli()
		}
		if st.ExitCode != nil {
			ts.Exit = strconv.Itoa(*st.ExitCode)
		}
		out[st.ID] = ts
	}
	return out, hidden
}

func timeline(run string, steps []apiwire.Step, now time.Time) timelineView {
	started, hidden := startedSteps(steps)
	v := timelineView{W: timelineLabel + timelineBar + 20, Hidden: hidden, Label: timelineLabel, Bar: timelineBar, RowH: timelineRowH}
	if len(started) == 0 {
		return v
	}
	t0 := *started[0].StartedAt
	end := t0
	for _, st := range started {
		e := now
		if st.FinishedAt != nil {
			e = *st.FinishedAt
		}
		if e.After(end) {
			end = e
		}
	}
	span := max(end.Sub(t0), time.Second)
	v.Start, v.Span = t0, span
	for i, st := range started {
		e, running := now, st.FinishedAt == nil
		if !running {
			e = *st.FinishedAt
		}
		x := int(float64(st.StartedAt.Sub(t0)) / float64(span) * timelineBar)
		w := max(2, int(float64(e.Sub(*st.StartedAt))/float64(span)*timelineBar))
		code := ""
		if st.ExitCode != nil {
			code = strconv.Itoa(*st.ExitCode)
		}
		v.Rows = append(v.Rows, timelineRow{Step: st.ID, Node: st.Node, Status: st.Status, Y: i * timelineRowH,
			X: timelineLabel + x, BarW: min(w, timelineBar-x+2), Started: *st.StartedAt, Duration: e.Sub(*st.StartedAt).Round(time.Millisecond),
			ExitCode: code, Retries: max(0, st.Attempt-1), Running: running,
			Href:  "/runs/" + url.PathEscape(run) + "?step=" + url.QueryEscape(st.ID),
			Begin: st.StartedAt.UnixMilli()})
		if !running {
			v.Rows[len(v.Rows)-1].End = st.FinishedAt.UnixMilli()
		}
	}
	v.H = len(v.Rows)*timelineRowH + 4
	return v
}

// stepDetail is the panel of one step.
type stepDetail struct {
	Run     string
	Step    apiwire.Step
	Spec    *event.Step
	Command string
	Gate    *apiwire.Gate
	// Attempts are the step's finished attempts, oldest first, from its
	// task.finished events (their output tails are redacted as every
	// output is).
	Attempts []attemptView
	// Decisions are the recorded answers to the step's gates, oldest
	// first.
	Decisions []decision
	// Output is the URL of the step's live output ("" when the node does
	// not follow output).
	Output string
}

// attemptView is one finished attempt.
type attemptView struct {
	event.TaskFinishedData
	Seq uint64
}

// maxAttemptPages bounds the audit pages read for a step's attempts.
const maxAttemptPages = 20

// history reads the finished attempts of one step and the answers to its
// gates from the run's audit, in one pass.
func (s *Server) history(ctx context.Context, run, step string) ([]attemptView, []decision, error) {
	var out []attemptView
	var ds []decision
	req := apiwire.AuditRequest{Run: run, Types: append([]string{string(event.TaskFinished)}, decisionTypes...)}
	for range maxAttemptPages {
		page, err := s.src.Audit(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		for _, raw := range page.Items {
			var l apiwire.AuditLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, nil, fmt.Errorf("web: an audit line: %w", err)
			}
			if event.Type(l.Type) != event.TaskFinished {
				if d, ok := decisionOf(l); ok && d.Step == step {
					ds = append(ds, d)
				}
				continue
			}
			var d event.TaskFinishedData
			if json.Unmarshal(l.Data, &d) == nil && d.Step == step {
				out = append(out, attemptView{TaskFinishedData: d, Seq: l.Seq})
			}
		}
		if page.End {
			break
		}
		req.Cursor = page.Next
	}
	return out, ds, nil
}

// revDiff says what a revision changed from the one before.
type revDiff struct {
	From, To               int
	Added, Removed, Change []string
	Rationale              string
}

func diffRevs(a, b planRev) revDiff {
	d := revDiff{From: a.Revision, To: b.Revision, Rationale: b.Rationale}
	old := map[string]event.Step{}
	for _, st := range a.Plan.Steps {
		old[st.ID] = st
	}
	seen := map[string]bool{}
	for _, st := range b.Plan.Steps {
		seen[st.ID] = true
		o, ok := old[st.ID]
		switch {
		case !ok:
			d.Added = append(d.Added, st.ID)
		case o.Run != st.Run || o.Path != st.Path || o.Patch != st.Patch || o.Content != st.Content || !slices.Equal(o.DependsOn, st.DependsOn):
			d.Change = append(d.Change, st.ID)
		}
	}
	for _, st := range a.Plan.Steps {
		if !seen[st.ID] {
			d.Removed = append(d.Removed, st.ID)
		}
	}
	return d
}

// runView is the run page's data.
type runView struct {
	Run      apiwire.RunSummary
	Done     int
	Revs     []planRev
	Rev      *planRev
	Current  bool
	Diff     *revDiff
	DAG      dagView
	Timeline timelineView
	Detail   *stepDetail
	Full     bool
	// Expand is the group drawn step by step (?expand=), if any.
	Expand string
	Steps  []apiwire.Step
	Events string
	// Actions are the run's controls for a signed-in operator (nil: none,
	// for viewers and anonymous browsers).
	Actions *runActions
	// Acted is the action just recorded (?acted=&event=), if any.
	Acted *acted
}

// runActions are the controls a run's page shows: every action of a run
// not yet final, the ones its status allows now visible and the others
// hidden; each carries the statuses it is allowed in, and the page's
// script shows and hides them as the live status changes.
type runActions struct {
	CSRF                              string
	Pause, Resume, Cancel             bool
	PauseWhen, ResumeWhen, CancelWhen string
}

// acted is an action on a run the page just recorded.
type acted struct{ Action, Event string }

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	sum, steps, err := s.readRun(ctx, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	revs, err := s.readPlans(ctx, sum.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := runView{Run: sum, Done: apiwire.Done(sum), Revs: revs, Full: q.Get("full") == "1", Steps: steps,
		Events: "/audit?run=" + url.QueryEscape(sum.ID)}
	want := sum.Revision
	if rs := q.Get("rev"); rs != "" {
		n, err := strconv.Atoi(rs)
		if err != nil || !slices.ContainsFunc(revs, func(p planRev) bool { return p.Revision == n }) {
			s.fail(w, r, apiwire.WithHint(fmt.Errorf("%w: run %s has no plan revision %q", apiwire.ErrBadRequest, sum.ID, rs), "pick one of the run's revisions"))
			return
		}
		want = n
	}
	for i := range revs {
		if revs[i].Revision == want {
			v.Rev = &revs[i]
			if i > 0 {
				d := diffRevs(revs[i-1], revs[i])
				v.Diff = &d
			}
		}
	}
	v.Current = want == sum.Revision
	status := map[string]string{}
	if v.Current {
		for _, st := range steps {
			status[st.ID] = st.Status
		}
	}
	ps := planSteps(v.Rev, steps)
	if !v.Current && v.Rev == nil {
		ps = nil
	}
	full := v.Full || len(ps) <= layout.DefaultThreshold
	expand := q.Get("expand")
	if !full {
		v.Expand = expand
	}
	l, err := s.layoutOf(sum.ID, v.Rev, ps, full, expand)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	titles := map[string]string{}
	if v.Rev != nil {
		for _, sg := range v.Rev.Plan.Subgoals {
			titles[sg.ID] = sg.Title
		}
	}
	v.DAG = s.dagView(sum.ID, l, ps, status, titles, full)
	v.Timeline = timeline(sum.ID, steps, s.now())
	v.Actions = s.runActions(r, sum.Status)
	if a := q.Get("acted"); a == "pause" || a == "resume" || a == "cancel" {
		v.Acted = &acted{Action: a, Event: q.Get("event")}
	}
	if id := q.Get("step"); id != "" {
		d, err := s.detail(ctx, sum.ID, id, steps, v.Rev)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.Detail = d
	}
	live := ""
	if v.Current {
		lq := url.Values{}
		if full && len(ps) > layout.DefaultThreshold {
			lq.Set("full", "1")
		} else if expand != "" && !full {
			lq.Set("expand", expand)
		}
		live = "/runs/" + url.PathEscape(sum.ID) + "/live"
		if len(lq) > 0 {
			live += "?" + lq.Encode()
		}
	}
	s.render(w, r, http.StatusOK, "run", page{Title: "Run " + shortID(sum.ID), Nav: "runs", Live: live, Data: v})
}

// detail is one step's panel.
func (s *Server) detail(ctx context.Context, run, id string, steps []apiwire.Step, rev *planRev) (*stepDetail, error) {
	d := &stepDetail{Run: run}
	if s.src.Output != nil {
		d.Output = "/runs/" + url.PathEscape(run) + "/steps/" + url.PathEscape(id) + "/output"
	}
	found := false
	for _, st := range steps {
		if st.ID == id {
			d.Step, found = st, true
		}
	}
	if rev != nil {
		for i := range rev.Plan.Steps {
			if rev.Plan.Steps[i].ID == id {
				d.Spec, found = &rev.Plan.Steps[i], true
			}
		}
	}
	if !found {
		return nil, apiwire.WithHint(fmt.Errorf("%w: run %s has no step %q", apiwire.ErrNotFound, run, id), "pick a step on the run's page")
	}
	if d.Spec != nil {
		d.Command = commandOf(*d.Spec)
	}
	if n := len(d.Step.Edits); n > 0 {
		d.Command = d.Step.Edits[n-1].To
	}
	var err error
	if d.Attempts, d.Decisions, err = s.history(ctx, run, id); err != nil {
		return nil, err
	}
	if s.src.Gates != nil && d.Step.Status == "gated" {
		page, err := s.src.Gates(ctx, apiwire.GatesRequest{Run: run, Step: id})
		if err == nil && len(page.Items) > 0 {
			var g apiwire.Gate
			if json.Unmarshal(page.Items[0], &g) == nil {
				d.Gate = &g
			}
		}
	}
	return d, nil
}

// commandOf is what a step runs, as text.
func commandOf(st event.Step) string {
	switch {
	case st.Run != "":
		return st.Run
	case st.Patch != "":
		return "patch " + st.Path + "\n" + st.Patch
	case st.Path != "":
		return "write " + st.Path + "\n" + st.Content
	case st.Criteria != "":
		return "critique " + st.Target + ": " + st.Criteria
	}
	return ""
}

func (s *Server) stepPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sum, steps, err := s.readRun(ctx, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	revs, err := s.readPlans(ctx, sum.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var rev *planRev
	for i := range revs {
		if revs[i].Revision == sum.Revision {
			rev = &revs[i]
		}
	}
	d, err := s.detail(ctx, sum.ID, r.PathValue("step"), steps, rev)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.URL.Query().Get("fragment") == "1" {
		s.renderFragment(w, "step", "detail", d)
		return
	}
	s.render(w, r, http.StatusOK, "step", page{Title: "Step " + d.Step.ID, Nav: "runs", Data: d})
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
