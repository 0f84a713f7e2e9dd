package api

import "context"

// Revocations reads every credential revocation the answering ledger node
// holds, in stream order (revocations.list).
func (c *Client) Revocations(ctx context.Context) ([]Revocation, error) {
	var out []Revocation
	if err := c.Call(ctx, MethodRevocationsList, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Credentials reads the credentials of kind ("node" or "operator") and id
// the answering ledger node saw signing, oldest issued first
// (credentials.list).
func (c *Client) Credentials(ctx context.Context, kind, id string) ([]CredentialSeen, error) {
	var out []CredentialSeen
	if err := c.Call(ctx, MethodCredentialsList, CredentialsRequest{Kind: kind, ID: id}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
