package api

import "context"

// MemoryFacts reads one page of facts.
func (c *Client) MemoryFacts(ctx context.Context, req MemoryFactsRequest) (*Page[Fact], error) {
	var p Page[Fact]
	if err := c.Call(ctx, MethodMemoryFacts, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// MemorySearch reads one page of a search's hits.
func (c *Client) MemorySearch(ctx context.Context, req MemorySearchRequest) (*MemorySearchPage[SearchHit], error) {
	var p MemorySearchPage[SearchHit]
	if err := c.Call(ctx, MethodMemorySearch, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
