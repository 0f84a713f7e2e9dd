package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/memory"
)

// startMemoryAPI serves memory.facts and memory.search from the memory
// role's fold (docs/memory.md).
func (n *Node) startMemoryAPI(s *api.Server) {
	api.HandleTyped(s, api.MethodMemoryFacts, guard(n, n.memoryFacts))
	api.HandleTyped(s, api.MethodMemorySearch, guard(n, n.memorySearch))
}

// memoryFacts answers one page of facts, cut by count and size.
func (n *Node) memoryFacts(ctx context.Context, req api.MemoryFactsRequest) (api.Page[json.RawMessage], error) {
	if req.Scope != "" {
		if err := memory.ValidScope(req.Scope); err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
		}
	}
	limit := api.PageLimit(req.Limit, api.DefaultFactsPage, api.MaxFactsPage)
	page := n.mem.Page(memory.ListOptions{Scope: req.Scope, Prefix: req.Prefix, Tag: req.Tag, Quarantined: req.Quarantined,
		After: req.Cursor, Limit: limit}, time.Now())
	p := api.NewPager(limit, api.MaxPayload(ctx))
	last, end := req.Cursor, page.Next == ""
	for _, f := range page.Facts {
		added, err := p.Add(fact(f))
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: memory.facts: fact %s/%s: %w", f.Scope, f.Key, err)
		}
		if !added {
			end = false
			break
		}
		last = memory.Cursor(f)
	}
	return p.Page(last, end), nil
}

// memorySearch answers one page of a search's hits, cut by count and
// size; the cursor is the offset of the page's first hit.
func (n *Node) memorySearch(ctx context.Context, req api.MemorySearchRequest) (api.MemorySearchPage[json.RawMessage], error) {
	if err := req.Validate(); err != nil {
		return api.MemorySearchPage[json.RawMessage]{}, err
	}
	if req.Scope != "" {
		if err := memory.ValidScope(req.Scope); err != nil {
			return api.MemorySearchPage[json.RawMessage]{}, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
		}
	}
	offset, _ := strconv.Atoi(req.Cursor) // Validate checked it
	limit := api.PageLimit(req.Limit, api.DefaultSearchPage, api.MaxSearchPage)
	res := n.mem.Search(req.Query, time.Now(), memory.SearchOptions{Scope: req.Scope, Quarantined: req.Quarantined, Offset: offset, Limit: limit})
	p := api.NewPager(limit, api.MaxPayload(ctx))
	next := offset
	for _, h := range res.Hits {
		added, err := p.Add(api.SearchHit{Fact: fact(h.Fact), Score: h.Score})
		if err != nil {
			return api.MemorySearchPage[json.RawMessage]{}, fmt.Errorf("node: memory.search: fact %s/%s: %w", h.Fact.Scope, h.Fact.Key, err)
		}
		if !added {
			break
		}
		next++
	}
	end := res.Next == 0 && next == offset+len(res.Hits)
	return api.MemorySearchPage[json.RawMessage]{Page: p.Page(strconv.Itoa(next), end), Total: res.Total}, nil
}

// memoryFolder returns the node's memory fold: the memory role's (n.mem)
// when it runs one, else, on an orchestrator, a fold of its own that the
// leader resolves steps' memory references with; nil on a node that
// needs neither.
func (n *Node) memoryFolder() *memory.Memory {
	switch {
	case n.has(event.RoleMemory):
		n.mem = memory.New()
		return n.mem
	case n.has(event.RoleOrchestrator):
		return memory.New()
	}
	return nil
}
