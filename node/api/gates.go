package api

import "context"

// Gates returns one page of open gates (gates.list): oldest run first, in
// plan order within a run; of req.Run (an id or unique prefix) and
// req.Step when given.
func (c *Client) Gates(ctx context.Context, req GatesRequest) (*Page[Gate], error) {
	var p Page[Gate]
	if err := c.Call(ctx, MethodGatesList, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GatesAll walks gates.list from req.Cursor on and returns every open gate
// that matches req.
func (c *Client) GatesAll(ctx context.Context, req GatesRequest) ([]Gate, error) {
	var out []Gate
	fetch := func(ctx context.Context, cursor string) (*Page[Gate], error) {
		r := req
		r.Cursor = cursor
		return c.Gates(ctx, r)
	}
	for g, err := range Walk(ctx, req.Cursor, fetch) {
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}
