package api

import "context"

// MemoryCommands asks a memory node for its command statistics.
func (c *Client) MemoryCommands(ctx context.Context, req CommandsRequest) (*CommandStats, error) {
	var out CommandStats
	if err := c.Call(ctx, MethodMemoryCommands, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
