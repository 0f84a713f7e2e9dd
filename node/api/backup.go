package api

import "context"

// NodeBackup asks the node of an At client to back itself up into out.
func (c *Client) NodeBackup(ctx context.Context, out string) (*BackupResult, error) {
	return c.NodeBackupWith(ctx, BackupRequest{Out: out})
}

// NodeBackupWith asks the node of an At client for the backup req
// describes (its directory, whether to leave the artifacts out).
func (c *Client) NodeBackupWith(ctx context.Context, req BackupRequest) (*BackupResult, error) {
	var r BackupResult
	if err := c.call(ctx, MethodNodeBackup, req, &r, max(c.timeout, BackupTimeout)); err != nil {
		return nil, err
	}
	return &r, nil
}
