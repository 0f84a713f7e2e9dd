package apiwire

import "context"

// Caller asks one method of the query API and decodes its answer into
// resp: what node/api's Client does, and all a role needs of it, so that a
// role asks the API without importing the node.
type Caller interface {
	Call(ctx context.Context, method string, req, resp any) error
}
