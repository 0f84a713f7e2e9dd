package node

import (
	"context"

	"github.com/agentic-dev/agentic/node/api"
)

// memoryCommands answers memory.commands from the memory role's fold.
func (n *Node) memoryCommands(_ context.Context, req api.CommandsRequest) (api.CommandStats, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, api.MaxCommands)
	notes := req.Notes
	if notes <= 0 {
		notes = 10
	}
	all, overflow := n.mem.Commands(0)
	out := api.CommandStats{Commands: []api.CommandStat{}, Shapes: len(all), Overflow: overflow, Notes: n.mem.Notes(min(notes, 50))}
	for _, c := range all[:min(limit, len(all))] {
		out.Commands = append(out.Commands, api.CommandStat(c))
	}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	return out, nil
}
