package node

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodes"
)

// nodesList answers a page of nodes.list: the nodes read model merged
// with this node's live gossip view, the leader and epoch (of a live
// lease: liveLeader), the clock skew
// of each signer as this node's follower measured it, and the slots used
// when this node can tell.
func (n *Node) nodesList(ctx context.Context, req api.NodesListRequest) (api.NodesPage[json.RawMessage], error) {
	if err := req.Validate(); err != nil {
		return api.NodesPage[json.RawMessage]{}, err
	}
	leader, epoch, _ := n.liveLeader()
	in := nodes.MergeInput{
		Recorded: n.nodes.List(),
		Self:     nodes.Self{Name: n.cfg.Name, Roles: n.cfg.Roles, Version: Version, Incarnation: n.incarnation},
		Leader:   leader,
		Epoch:    epoch,
		Skews:    n.follower.Skews(),
	}
	if n.load != nil {
		in.Load = n.load()
	}
	out := api.NodesPage[json.RawMessage]{Leader: leader, Epoch: epoch, Node: n.cfg.Name}
	if n.gossip != nil {
		in.Live = n.gossip.Members()
		out.Gossip = n.gossip.Addr()
	}
	p := api.NewPager(api.PageLimit(req.Limit, api.DefaultNodesPage, api.MaxNodesPage), api.MaxPayload(ctx))
	last, end := req.Cursor, true
	for _, row := range nodes.After(nodes.Merge(in), req.Cursor) {
		if row.Name == n.cfg.Name {
			ready := n.Ready()
			row.Ready, row.Checks = new(ready == nil), n.Checks()
			if ready != nil {
				row.NotReady = ready.Error()
			}
		}
		added, err := p.Add(row)
		if err != nil {
			return api.NodesPage[json.RawMessage]{}, fmt.Errorf("node: nodes.list: node %s: %w", row.Name, err)
		}
		if !added {
			end = false
			break
		}
		last = row.Name
	}
	out.Page = p.Page(last, end)
	return out, nil
}

// alarmsList answers a page of alarms.list: the alarms in force as the
// nodes read model folded them, by node then code.
func (n *Node) alarmsList(ctx context.Context, req api.AlarmsListRequest) (api.Page[json.RawMessage], error) {
	if err := req.Validate(); err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	p := api.NewPager(api.PageLimit(req.Limit, api.DefaultAlarmsPage, api.MaxAlarmsPage), api.MaxPayload(ctx))
	last, end := req.Cursor, true
	for _, a := range nodes.AlarmsAfter(n.nodes.Alarms(), req.Cursor) {
		added, err := p.Add(a)
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: alarms.list: node %s alarm %s: %w", a.Node, a.Alarm, err)
		}
		if !added {
			end = false
			break
		}
		last = nodes.AlarmCursor(a)
	}
	return p.Page(last, end), nil
}
