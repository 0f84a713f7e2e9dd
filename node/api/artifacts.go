package api

import "context"

// ArtifactsList reads one page of a run's artifacts (or the one named).
func (c *Client) ArtifactsList(ctx context.Context, req ArtifactsRequest) (*Page[Artifact], error) {
	var p Page[Artifact]
	if err := c.Call(ctx, MethodArtifactsList, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
