package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the Object Store bucket that holds artifacts; BucketStream is
// the stream behind it.
const (
	Bucket       = "agentic_artifacts"
	BucketStream = "OBJ_" + Bucket
)

// DefaultMaxAge is the bucket's age limit when Ensure creates it: what
// prunes artifacts (and orphaned uploads) in the end. See
// docs/artifacts.md, "Retention".
const DefaultMaxAge = 30 * 24 * time.Hour

// Errors callers test for with errors.Is.
var (
	// ErrTampered: an object's bytes, size or recorded digest differ from
	// the sha256 and size the ledger recorded for it.
	ErrTampered = errors.New("artifact: the stored object does not match its recorded sha256 (tampered or corrupted)")
	// ErrNotFound: no object holds those bytes (pruned, or never stored).
	ErrNotFound = errors.New("artifact: not found")
	// ErrTooLarge: the artifact is larger than the cap it was put with.
	ErrTooLarge = errors.New("artifact: larger than the size cap")
)

// Store puts and gets artifacts in the bucket. It is safe for concurrent
// use.
type Store struct {
	obs jetstream.ObjectStore
}

// Config is the bucket's configuration when Ensure creates it.
type Config struct {
	// Replicas of the bucket's stream: the streams' (bus.StreamConfig).
	Replicas int
	// MaxAge prunes objects older than it (DefaultMaxAge if 0).
	MaxAge time.Duration
	// MaxBytes bounds the bucket (0: no limit).
	MaxBytes int64
}

// BucketConfig is the Object Store configuration Ensure creates.
func BucketConfig(c Config) jetstream.ObjectStoreConfig {
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	mb := c.MaxBytes
	if mb <= 0 {
		mb = -1
	}
	return jetstream.ObjectStoreConfig{
		Bucket:      Bucket,
		Description: "agentic artifacts: step outputs and sources by content (sha256)",
		TTL:         c.MaxAge,
		MaxBytes:    mb,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	}
}

// Ensure creates the bucket unless it exists; an existing bucket is left
// as it is.
func Ensure(ctx context.Context, js jetstream.JetStream, c Config) error {
	if _, err := js.Stream(ctx, BucketStream); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("artifact: bucket %s: %w", Bucket, err)
	}
	_, err := js.CreateObjectStore(ctx, BucketConfig(c))
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("artifact: create bucket %s: %w", Bucket, err)
	}
	return nil
}

// Open returns the store of the bucket, which must exist (Ensure).
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	obs, err := js.ObjectStore(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("artifact: open bucket %s: %w", Bucket, err)
	}
	return &Store{obs: obs}, nil
}

// Info describes a stored artifact: what an artifact.stored event
// records of it.
type Info struct {
	// Name is the name it was put with.
	Name string
	// Size in bytes, and SHA256 (lowercase hex) of its bytes.
	Size   int64
	SHA256 string
	// Object is the upload's name in the bucket.
	Object string
	// Meta is the extra metadata it was put with.
	Meta map[string]string
}

// PutOptions are the options of a Put.
type PutOptions struct {
	// MaxSize refuses an artifact larger than it (ErrTooLarge); 0: no cap.
	MaxSize int64
	// Meta is extra metadata kept with the object (a source's "url" and
	// "fetched" time), at most 16 entries.
	Meta map[string]string
}

// ContentName is the name of the link that finds the newest upload of the
// bytes with sha256 sum.
func ContentName(sum string) string { return "sha256/" + sum }

// Put streams r into the bucket as the artifact name, and returns its
// size and sha256 once the object is whole and acknowledged (invariant 2).
// Nothing of r is held beyond one chunk.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, o PutOptions) (Info, error) {
	if len(o.Meta) > 16 {
		return Info{}, fmt.Errorf("artifact: put %s: %d metadata entries, at most 16", name, len(o.Meta))
	}
	lr := &capReader{r: r, left: o.MaxSize, capped: o.MaxSize > 0}
	// A UUIDv7, not a nuid: ids the secret scan takes for what they are
	// (a nuid's 22 random characters look like a token to it).
	id, err := uuid.NewV7()
	if err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	object := "up/" + id.String()
	oi, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: object, Description: name, Metadata: o.Meta}, lr)
	if lr.over {
		return Info{}, fmt.Errorf("artifact: put %s: %w (%d bytes)", name, ErrTooLarge, o.MaxSize)
	}
	if err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	sum, err := digestHex(oi.Digest)
	if err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	if _, err := s.obs.AddLink(ctx, ContentName(sum), oi); err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: link %s: %w", name, sum, err)
	}
	return Info{Name: name, Size: int64(oi.Size), SHA256: sum, Object: object, Meta: o.Meta}, nil
}

// PutFile puts the file at path (PutOptions as Put's).
func (s *Store) PutFile(ctx context.Context, name, path string, o PutOptions) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	defer f.Close()
	return s.Put(ctx, name, f, o)
}

// capReader fails the read past its cap.
type capReader struct {
	r      io.Reader
	left   int64
	capped bool
	over   bool
}

var errOverCap = errors.New("over the size cap")

func (c *capReader) Read(p []byte) (int, error) {
	if !c.capped {
		return c.r.Read(p)
	}
	if c.left <= 0 {
		// One byte more tells a file of exactly the cap from a larger one.
		var b [1]byte
		n, err := c.r.Read(b[:])
		if n > 0 {
			c.over = true
			return 0, errOverCap
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func digestHex(d string) (string, error) {
	b, err := jetstream.DecodeObjectDigest(d)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("object digest %q is not a sha256", d)
	}
	return hex.EncodeToString(b), nil
}

func digestOf(sum string) string {
	b, _ := hex.DecodeString(sum)
	return "SHA-256=" + base64.URLEncoding.EncodeToString(b)
}

// Open returns a reader of the artifact with sha256 sum and size, found
// by object (its upload; empty: the newest upload of those bytes). The
// reader fails with ErrTampered as soon as the object is found to differ
// — before the first byte when its metadata does, at the end when its
// bytes do — so a caller must not use what it read unless it reached
// io.EOF without an error.
func (s *Store) Open(ctx context.Context, sum string, size int64, object string) (io.ReadCloser, error) {
	if !event.ValidSHA256(sum) {
		return nil, fmt.Errorf("artifact: %q is not a sha256", sum)
	}
	if object == "" {
		object = ContentName(sum)
	}
	res, err := s.obs.Get(ctx, object)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: sha256 %s (object %s)", ErrNotFound, sum, object)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	oi, err := res.Info()
	if err != nil {
		res.Close()
		return nil, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	if oi.Digest != digestOf(sum) || int64(oi.Size) != size {
		res.Close()
		return nil, fmt.Errorf("%w: object %s says %d bytes, %s; the ledger recorded %d bytes, sha256 %s",
			ErrTampered, object, oi.Size, oi.Digest, size, sum)
	}
	return &verifier{r: res, h: sha256.New(), want: sum, size: size}, nil
}

// verifier hashes what it passes on and checks it at the end.
type verifier struct {
	r    io.ReadCloser
	h    hash.Hash
	want string
	size int64
	n    int64
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.size {
		return n, fmt.Errorf("%w: more than the %d bytes recorded", ErrTampered, v.size)
	}
	if err == io.EOF {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want || v.n != v.size {
			return n, fmt.Errorf("%w: read %d bytes with sha256 %s, the ledger recorded %d bytes, sha256 %s",
				ErrTampered, v.n, got, v.size, v.want)
		}
		return n, io.EOF
	}
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return n, fmt.Errorf("%w: %w", ErrTampered, err)
	}
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }

// Get copies the verified artifact to w, and returns how many bytes it
// wrote. On ErrTampered w has received unverified bytes: write to a file
// with GetFile where that matters.
func (s *Store) Get(ctx context.Context, sum string, size int64, object string, w io.Writer) (int64, error) {
	r, err := s.Open(ctx, sum, size, object)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := io.Copy(w, r)
	if err != nil {
		return n, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	return n, nil
}

// GetFile writes the verified artifact to path: through a temporary file
// beside it, renamed into place only once the whole object verified, so
// that path never holds a partial or unverified artifact. mode is the
// file's permission bits (0o644 if 0).
func (s *Store) GetFile(ctx context.Context, sum string, size int64, object, path string, mode os.FileMode) error {
	if mode == 0 {
		mode = 0o644
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".part-*")
	if err != nil {
		return fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := s.Get(ctx, sum, size, object, f); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	ok = true
	return nil
}

// Stat returns what the bucket says of the newest upload of sum (its
// size and upload name), or ErrNotFound.
func (s *Store) Stat(ctx context.Context, sum string) (Info, error) {
	oi, err := s.obs.GetInfo(ctx, ContentName(sum))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Info{}, fmt.Errorf("%w: sha256 %s", ErrNotFound, sum)
	}
	if err != nil {
		return Info{}, fmt.Errorf("artifact: stat sha256 %s: %w", sum, err)
	}
	if oi.Opts == nil || oi.Opts.Link == nil {
		return Info{}, fmt.Errorf("%w: %s is not a link", ErrTampered, ContentName(sum))
	}
	target, err := s.obs.GetInfo(ctx, oi.Opts.Link.Name)
	if err != nil {
		return Info{}, fmt.Errorf("artifact: stat sha256 %s: %w", sum, err)
	}
	return Info{Name: target.Description, Size: int64(target.Size), SHA256: sum, Object: target.Name, Meta: target.Metadata}, nil
}
