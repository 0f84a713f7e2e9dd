package research

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the Object Store bucket that holds fetched sources.
const Bucket = "AGENTIC_SOURCES"

// ErrTampered marks a stored source whose bytes do not hash to the
// sha256 it was recorded with.
var ErrTampered = errors.New("research: source does not match its sha256")

// Object is a stored source: its name in the store, sha256 (hex) and
// size.
type Object struct {
	Name   string
	SHA256 string
	Size   int64
}

// Store keeps fetched sources. Put streams r into the object name, with
// meta as its headers, and returns it once complete — when r fails, no
// object is recorded under name —; Open reads an object back, failing
// with ErrTampered at the end of a body whose hash is not sha.
type Store interface {
	Put(ctx context.Context, name string, meta map[string]string, r io.Reader) (Object, error)
	Open(ctx context.Context, name, sha string) (io.ReadCloser, error)
}

// ObjectStore is a Store on a JetStream Object Store bucket.
type ObjectStore struct {
	js       jetstream.JetStream
	replicas int
}

var _ Store = (*ObjectStore)(nil)

// NewObjectStore is a Store on the Bucket of js, created on first use
// with replicas copies (at least 1).
func NewObjectStore(js jetstream.JetStream, replicas int) *ObjectStore {
	return &ObjectStore{js: js, replicas: max(replicas, 1)}
}

// bucket opens the bucket, creating it when absent.
func (s *ObjectStore) bucket(ctx context.Context) (jetstream.ObjectStore, error) {
	os, err := s.js.ObjectStore(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		os, err = s.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: Bucket,
			Description: "sources fetched by research steps", Storage: jetstream.FileStorage, Replicas: s.replicas})
	}
	if err != nil {
		return nil, fmt.Errorf("research: object store %s: %w", Bucket, err)
	}
	return os, nil
}

// Put streams r into object name, computing its sha256 on the way.
func (s *ObjectStore) Put(ctx context.Context, name string, meta map[string]string, r io.Reader) (Object, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return Object{}, err
	}
	h := sha256.New()
	hdr := make(map[string][]string, len(meta))
	for k, v := range meta {
		hdr[k] = []string{v}
	}
	// A reader that fails makes Put publish no meta: no object is
	// recorded under name.
	info, err := b.Put(ctx, jetstream.ObjectMeta{Name: name, Headers: hdr}, io.TeeReader(r, h))
	if err != nil {
		return Object{}, fmt.Errorf("research: store %s: %w", name, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if d := digestHex(info.Digest); d != "" && d != sum {
		return Object{}, fmt.Errorf("research: store %s: the store's digest %s is not the body's sha256 %s", name, d, sum)
	}
	return Object{Name: name, SHA256: sum, Size: int64(info.Size)}, nil
}

// Open reads object name, verified against sha as it is read.
func (s *ObjectStore) Open(ctx context.Context, name, sha string) (io.ReadCloser, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	r, err := b.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("research: open source %s: %w", name, err)
	}
	return &verifying{r: r, h: sha256.New(), want: strings.ToLower(sha), name: name}, nil
}

// digestHex turns an Object Store digest ("SHA-256=<base64url>") into
// hex; "" when it is not one.
func digestHex(d string) string {
	v, ok := strings.CutPrefix(d, "SHA-256=")
	if !ok {
		return ""
	}
	raw, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(raw)
}

// verifying hashes what it reads and fails at the end when the hash is
// not want.
type verifying struct {
	r    io.ReadCloser
	h    hash.Hash
	want string
	name string
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return n, fmt.Errorf("%w: %s hashes to %s, recorded as %s", ErrTampered, v.name, got, v.want)
		}
	}
	return n, err
}

func (v *verifying) Close() error { return v.r.Close() }
