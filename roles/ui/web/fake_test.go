package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// t0 is the fixed time of the fixtures.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ledger is an in-memory read model with the answers' shapes: runs with
// their steps, and an audit of numbered lines. Changing it wakes the
// dashboard's streams, as the node's follower does.
type ledger struct {
	mu      sync.Mutex
	runs    []api.RunSummary
	steps   map[string][]api.Step
	lines   []api.AuditLine
	gates   []api.Gate
	changed chan struct{}
}

func newLedger() *ledger {
	return &ledger{steps: map[string][]api.Step{}, changed: make(chan struct{})}
}

func (l *ledger) source() web.Source {
	return web.Source{Runs: l, Audit: l.Audit, Gates: l.Gates, Nodes: l.Nodes, Alarms: l.Alarms, Changed: l.Changed}
}

func (l *ledger) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// change applies f and wakes the waiters.
func (l *ledger) change(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
	close(l.changed)
	l.changed = make(chan struct{})
}

// addRun adds a run with its steps and a plan.proposed and plan.accepted
// of plan (revision 1).
func (l *ledger) addRun(sum api.RunSummary, plan event.Plan, steps []api.Step) {
	l.change(func() {
		sum.Steps = len(steps)
		sum.Revision = 1
		sum.StepCounts = map[string]int{}
		for _, st := range steps {
			sum.StepCounts[st.Status]++
		}
		l.runs = append([]api.RunSummary{sum}, l.runs...)
		l.steps[sum.ID] = steps
		l.appendLine(sum.ID, event.PlanProposed, event.PlanProposedData{Revision: 1, Source: "file", Plan: plan})
		l.appendLine(sum.ID, event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
	})
}

func (l *ledger) appendLine(run string, typ event.Type, data any) {
	b, _ := json.Marshal(data)
	seq := uint64(len(l.lines) + 1)
	l.lines = append(l.lines, api.AuditLine{Seq: seq, Type: string(typ), Run: run, Node: "n1", Time: t0.Add(time.Duration(seq) * time.Second),
		Subject: "agentic.events." + run, Data: b, JWS: "header.payload.sig"})
}

// setStatus changes one step's status and records an event for it.
func (l *ledger) setStatus(run, step, status string) {
	l.change(func() {
		for i := range l.steps[run] {
			if l.steps[run][i].ID == step {
				l.steps[run][i].Status = status
			}
		}
		l.appendLine(run, event.Type("step."+status), map[string]string{"step": step})
	})
}

func (l *ledger) List(_ context.Context, req api.RunsListRequest) (api.Page[json.RawMessage], error) {
	if err := req.Validate(); err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := api.NewPager(api.PageLimit(req.Limit, 100, 1000), 1<<20)
	for _, r := range l.runs {
		if req.Status != "" && string(r.Status) != req.Status || req.Goal != "" && !strings.Contains(strings.ToLower(r.Goal), strings.ToLower(req.Goal)) {
			continue
		}
		if st := l.steps[r.ID]; st != nil {
			r.StepCounts = map[string]int{}
			for _, s := range st {
				r.StepCounts[s.Status]++
			}
		}
		if _, err := p.Add(r); err != nil {
			return api.Page[json.RawMessage]{}, err
		}
	}
	return p.Page("", true), nil
}

func (l *ledger) find(id string) (api.RunSummary, error) {
	for _, r := range l.runs {
		if r.ID == id || strings.HasPrefix(r.ID, id) && id != "" {
			return r, nil
		}
	}
	return api.RunSummary{}, api.WithHint(fmt.Errorf("%w: no run matches %q", api.ErrNotFound, id), "agentctl run list")
}

func (l *ledger) Get(ctx context.Context, req api.RunsGetRequest) (api.RunDetail[json.RawMessage], error) {
	l.mu.Lock()
	r, err := l.find(req.ID)
	l.mu.Unlock()
	if err != nil {
		return api.RunDetail[json.RawMessage]{}, err
	}
	page, err := l.Steps(ctx, api.RunsStepsRequest{ID: r.ID, Limit: req.Limit})
	if err != nil {
		return api.RunDetail[json.RawMessage]{}, err
	}
	l.mu.Lock()
	r.StepCounts = map[string]int{}
	for _, s := range l.steps[r.ID] {
		r.StepCounts[s.Status]++
	}
	l.mu.Unlock()
	return api.RunDetail[json.RawMessage]{Run: r, Steps: &page}, nil
}

func (l *ledger) Steps(_ context.Context, req api.RunsStepsRequest) (api.Page[json.RawMessage], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, err := l.find(req.ID)
	if err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	after, err := api.ParseStepCursor(req.Cursor)
	if err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	p := api.NewPager(api.PageLimit(req.Limit, api.DefaultStepsPage, api.MaxStepsPage), 8<<20)
	steps := l.steps[r.ID]
	for i := after + 1; i < len(steps); i++ {
		if ok, err := p.Add(steps[i]); err != nil || !ok {
			return p.Page(api.StepCursor(i-1), false), err
		}
	}
	return p.Page("", true), nil
}

func (l *ledger) Audit(ctx context.Context, req api.AuditRequest) (api.LedgerPage[json.RawMessage], error) {
	after := req.After
	if req.Cursor != "" {
		n, err := strconv.ParseUint(req.Cursor, 10, 64)
		if err != nil {
			return api.LedgerPage[json.RawMessage]{}, fmt.Errorf("%w: bad cursor", api.ErrBadRequest)
		}
		after = n
	}
	deadline := time.Now().Add(req.Wait)
	for {
		l.mu.Lock()
		head := uint64(len(l.lines))
		changed := l.changed
		p := api.NewPager(api.PageLimit(req.Limit, 1000, 1000), 8<<20)
		last := after
		for i := after; i < head; i++ {
			ln := l.lines[i]
			last = ln.Seq
			if req.Run != "" && ln.Run != req.Run || len(req.Types) > 0 && !slices.Contains(req.Types, ln.Type) {
				continue
			}
			if ok, _ := p.Add(ln); !ok {
				last = ln.Seq - 1
				break
			}
		}
		l.mu.Unlock()
		page := p.Page(strconv.FormatUint(last, 10), last >= head)
		if len(page.Items) > 0 || req.Wait <= 0 || time.Now().After(deadline) {
			return api.LedgerPage[json.RawMessage]{Page: page, Head: head}, nil
		}
		after = last
		select {
		case <-changed:
		case <-ctx.Done():
			return api.LedgerPage[json.RawMessage]{Page: page, Head: head}, nil
		case <-time.After(time.Until(deadline)):
		}
	}
}

func (l *ledger) Gates(_ context.Context, req api.GatesRequest) (api.Page[json.RawMessage], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := api.NewPager(100, 1<<20)
	for _, g := range l.gates {
		if (req.Run == "" || g.Run == req.Run) && (req.Step == "" || g.Step == req.Step) {
			p.Add(g)
		}
	}
	return p.Page("", true), nil
}

func (l *ledger) Nodes(context.Context, api.NodesListRequest) (api.NodesPage[json.RawMessage], error) {
	ready := false
	b, _ := json.Marshal(api.NodeSummary{Name: "n1", Roles: []string{"orchestrator", "executor", "ui"}, Slots: 4, State: "alive", Leader: true, Epoch: 3,
		Version: "v1.2.3", Ready: &ready, NotReady: "disk: <b>full</b>"})
	return api.NodesPage[json.RawMessage]{Page: api.Page[json.RawMessage]{Items: []json.RawMessage{b}, End: true}, Leader: "n1", Epoch: 3, Node: "n1"}, nil
}

func (l *ledger) Alarms(context.Context, api.AlarmsListRequest) (api.Page[json.RawMessage], error) {
	b, _ := json.Marshal(api.Alarm{Node: "n1", Alarm: "disk_full", Check: "disk", Reason: "<script>alert(9)</script>", Raised: t0, Seq: 1})
	return api.Page[json.RawMessage]{Items: []json.RawMessage{b}, End: true}, nil
}
