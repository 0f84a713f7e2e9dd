package api

import "context"

// NodeBackup asks the node of an At client to back itself up into out.
func (c *Client) NodeBackup(ctx context.Context, out string) (*BackupResult, error) {
	var r BackupResult
	if err := c.call(ctx, MethodNodeBackup, BackupRequest{Out: out}, &r, max(c.timeout, BackupTimeout)); err != nil {
		return nil, err
	}
	return &r, nil
}
