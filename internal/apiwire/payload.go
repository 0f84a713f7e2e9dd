package apiwire

import "context"

type maxPayloadKey struct{}

// DefaultMaxPayload is NATS's default max payload (1 MiB).
const DefaultMaxPayload = 1 << 20

// WithMaxPayload returns ctx carrying the max payload of the connection
// an answer goes out on: a Server gives it to each handler.
func WithMaxPayload(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, maxPayloadKey{}, n)
}

// MaxPayload is, in a handler's context, the max payload of the connection
// the answer goes out on (DefaultMaxPayload elsewhere): what a Pager cuts
// pages under.
func MaxPayload(ctx context.Context) int64 {
	if n, ok := ctx.Value(maxPayloadKey{}).(int64); ok && n > 0 {
		return n
	}
	return DefaultMaxPayload
}
