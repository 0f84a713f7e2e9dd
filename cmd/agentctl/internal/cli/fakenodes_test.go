package cli

import (
	"context"
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodes"
)

// registerNodes answers nodes.list the way a node does: in name order,
// pageSize nodes a page, the cursor a node name.
func (f *fakeNode) registerNodes(s *api.Server) {
	api.HandleTyped(s, api.MethodNodesList, func(_ context.Context, req api.NodesListRequest) (api.NodesPage[api.NodeSummary], error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := req.Validate(); err != nil {
			return api.NodesPage[api.NodeSummary]{}, err
		}
		f.nodesPages++
		if req.Cursor == "" {
			f.nodesCalls++
			if f.nodesChange != nil {
				f.nodesChange(f, f.nodesCalls)
			}
		}
		all := slices.Clone(f.nodes)
		slices.SortFunc(all, func(a, b api.NodeSummary) int {
			if a.Name < b.Name {
				return -1
			}
			return 1
		})
		rows := nodes.After(all, req.Cursor)
		n := f.size(req.Limit)
		page := api.NodesPage[api.NodeSummary]{Leader: f.leader, Epoch: f.epoch, Node: "node-a", Gossip: "10.0.0.1:7946"}
		if len(rows) <= n {
			page.Page = api.Page[api.NodeSummary]{Items: rows, End: true}
		} else {
			page.Page = api.Page[api.NodeSummary]{Items: rows[:n], Next: rows[n-1].Name}
		}
		if page.Items == nil {
			page.Items = []api.NodeSummary{}
		}
		return page, nil
	})
}

// registerAlarms answers alarms.list the way a node does: by node then
// code, pageSize alarms a page.
func (f *fakeNode) registerAlarms(s *api.Server) {
	api.HandleTyped(s, api.MethodAlarmsList, func(_ context.Context, req api.AlarmsListRequest) (api.Page[api.Alarm], error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := req.Validate(); err != nil {
			return api.Page[api.Alarm]{}, err
		}
		rows := nodes.AlarmsAfter(f.alarms, req.Cursor)
		n := f.size(req.Limit)
		if len(rows) <= n {
			return api.Page[api.Alarm]{Items: append([]api.Alarm{}, rows...), End: true}, nil
		}
		return api.Page[api.Alarm]{Items: rows[:n], Next: nodes.AlarmCursor(rows[n-1])}, nil
	})
}

// withPeer starts another node's API server, answering node.info (also on
// the broadcast subject, as agentd does) with info.
func (h *harness) withPeer(t *testing.T, info api.NodeInfo) {
	t.Helper()
	srv := api.NewServer(h.conn.NC, info.ID, nil)
	srv.Sign(h.signer(t, info.ID, info.Roles...))
	api.HandleTyped(srv, api.MethodNodeInfo, func(context.Context, struct{}) (api.NodeInfo, error) { return info, nil })
	srv.Broadcast(api.MethodNodeInfo)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
}

// registerLedger answers ledger.outcome the way a
// ledger node does, judging the stream's messages with the real verifier
// against the harness's root: the fake folds the whole stream at once.
func (f *fakeNode) registerLedger(s *api.Server) {
	api.HandleTyped(s, api.MethodLedgerOutcome, func(ctx context.Context, req api.OutcomeRequest) (api.Outcome, error) {
		st, err := f.ledger.Stream(ctx, bus.EventsStream)
		if err != nil {
			return api.Outcome{}, err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return api.Outcome{}, err
		}
		out := api.Outcome{Node: "node-a", StreamSeq: req.StreamSeq, Applied: info.State.LastSeq, Records: []api.OutcomeRecord{}}
		if !out.Judged() {
			return out, nil
		}
		m, err := st.GetMsg(ctx, req.StreamSeq)
		if err != nil {
			return api.Outcome{}, err
		}
		env, err := envelope.NewVerifier(f.root).Verify(m.Data, m.Subject, m.Time)
		if err != nil {
			d := envelope.AsRejection(err).Record(m.Subject)
			out.Records = append(out.Records, api.OutcomeRecord{Seq: req.StreamSeq, Type: string(event.Rejected), ID: d.ClaimedID, Code: string(d.Code), Reason: d.Reason})
			return out, nil
		}
		for _, ev := range env.Events {
			out.Records = append(out.Records, api.OutcomeRecord{Seq: req.StreamSeq, Type: string(ev.Type), ID: ev.ID})
		}
		return out, nil
	})
}
