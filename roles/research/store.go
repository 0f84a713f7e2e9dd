package research

import (
	"context"
	"io"
	"sync"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrTampered marks a stored source whose bytes do not match the sha256
// its research step recorded (the artifact store's ErrTampered).
var ErrTampered = artifact.ErrTampered

// Store keeps fetched sources: the artifact store (bus/artifact), which
// names an object by its content. Put streams r into it under the
// artifact name, with extra metadata, refusing more than MaxSize bytes
// (artifact.ErrTooLarge) and recording nothing when r fails; Open reads
// an object back, verified against the sha256 and size the caller
// recorded.
type Store interface {
	Put(ctx context.Context, name string, r io.Reader, o artifact.PutOptions) (artifact.Info, error)
	Open(ctx context.Context, sum string, size int64, object string) (io.ReadCloser, error)
}

var (
	_ Store = (*artifact.Store)(nil)
	_ Store = (*LazyStore)(nil)
)

// LazyStore is the artifact store of a JetStream context, opened on
// first use (the bucket is made with the streams, bus.EnsureStreams,
// which may come after the role is built) and again after a failure.
type LazyStore struct {
	js jetstream.JetStream
	mu struct {
		sync.Mutex
		st *artifact.Store
	}
}

// NewLazyStore returns the artifact store of js, opened on first use.
func NewLazyStore(js jetstream.JetStream) *LazyStore { return &LazyStore{js: js} }

func (l *LazyStore) store(ctx context.Context) (*artifact.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.st == nil {
		st, err := artifact.Open(ctx, l.js)
		if err != nil {
			return nil, err
		}
		l.mu.st = st
	}
	return l.mu.st, nil
}

// Put is artifact.Store's Put.
func (l *LazyStore) Put(ctx context.Context, name string, r io.Reader, o artifact.PutOptions) (artifact.Info, error) {
	st, err := l.store(ctx)
	if err != nil {
		return artifact.Info{}, err
	}
	return st.Put(ctx, name, r, o)
}

// Open is artifact.Store's Open.
func (l *LazyStore) Open(ctx context.Context, sum string, size int64, object string) (io.ReadCloser, error) {
	st, err := l.store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Open(ctx, sum, size, object)
}
