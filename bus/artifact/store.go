package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
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
	js  jetstream.JetStream
	obs jetstream.ObjectStore
	// pub publishes chunks: one context for every Put, so that its
	// acknowledgements share one reply subscription (a context per Put
	// would leave one behind each).
	pub jetstream.JetStream

	// mu guards str, the bucket's stream, looked up on the first
	// reservation (reserve.go).
	mu  sync.Mutex
	str jetstream.Stream
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
	pub, err := jetstream.New(js.Conn(),
		// Every Put of the store together: 16 MiB in flight at most.
		jetstream.WithPublishAsyncMaxPending(4*putWindow),
		jetstream.WithPublishAsyncTimeout(ackWait))
	if err != nil {
		return nil, fmt.Errorf("artifact: open bucket %s: %w", Bucket, err)
	}
	return &Store{js: js, obs: obs, pub: pub}, nil
}

// Info describes a stored artifact: what an artifact.stored event
// records of it.
type Info struct {
	// Name is the name it was put with.
	Name string
	// Size in bytes, and SHA256 (lowercase hex) of its bytes.
	Size   int64
	SHA256 string
	// Object is the object's name in the bucket (ContentName).
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

// ContentName is the name of the object of the bytes with sha256 sum.
func ContentName(sum string) string { return "sha256/" + sum }

// Chunking and flow control of Put.
const (
	// ChunkSize is the size of an object's chunks (the Object Store's
	// default).
	ChunkSize = 128 << 10
	// putWindow bounds the chunks a Put has in flight (unacknowledged):
	// 4 MiB. nats.go's own Object Store Put allows 4,000 (500 MiB), past
	// what a server buffers for a stream (128 MiB by default): a large
	// object then fails with "too many requests" (429) on a server that
	// syncs every write.
	putWindow = 32
	// ackWait bounds the wait for one chunk's acknowledgement.
	ackWait = 30 * time.Second
)

// Put streams r into the bucket as the artifact name, and returns its
// size and sha256 once the object is whole and acknowledged (invariant
// 2). Nothing of r is held beyond the chunks in flight (putWindow).
//
// The chunks go out first, under a fresh upload id; the object's
// metadata — named by the sha256 of what was read, which is known only
// then — goes last. Until it is acknowledged no reader can find the
// chunks, so an interrupted Put leaves an orphan the bucket's age limit
// removes, and an existing object of the same bytes stays readable
// throughout.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, o PutOptions) (Info, error) {
	if len(o.Meta) > 16 {
		return Info{}, fmt.Errorf("artifact: put %s: %d metadata entries, at most 16", name, len(o.Meta))
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	upload := strings.ReplaceAll(id.String(), "-", "")
	lr := &capReader{r: r, left: o.MaxSize, capped: o.MaxSize > 0}
	h := sha256.New()
	subj := "$O." + Bucket + ".C." + upload
	var size int64
	var chunks uint32
	// The acknowledgements not yet seen, oldest first: waiting for the
	// oldest before sending past putWindow is the flow control.
	var acks []jetstream.PubAckFuture
	settle := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
		}
		buf := make([]byte, ChunkSize) // not reused: a chunk in flight may be sent again
		n, rerr := io.ReadFull(lr, buf)
		if lr.over {
			return Info{}, fmt.Errorf("artifact: put %s: %w (%d bytes)", name, ErrTooLarge, o.MaxSize)
		}
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return Info{}, fmt.Errorf("artifact: put %s: read: %w", name, rerr)
		}
		if n > 0 {
			h.Write(buf[:n])
			m := nats.NewMsg(subj)
			m.Data = buf[:n]
			f, err := s.pub.PublishMsgAsync(m, jetstream.WithStallWait(ackWait))
			if err != nil {
				return Info{}, fmt.Errorf("artifact: put %s: chunk %d: %w", name, chunks, err)
			}
			acks = append(acks, f)
			if len(acks) > putWindow {
				if err := settle(acks[0]); err != nil {
					return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
				}
				acks = acks[1:]
			}
			size += int64(n)
			chunks++
		}
		if rerr != nil {
			break
		}
	}
	for _, f := range acks {
		if err := settle(f); err != nil {
			return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
		}
	}
	sum := h.Sum(nil)
	hexSum := hex.EncodeToString(sum)
	oi := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: ContentName(hexSum), Description: name, Metadata: o.Meta,
			Opts: &jetstream.ObjectMetaOptions{ChunkSize: ChunkSize}},
		Bucket: Bucket, NUID: upload, Size: uint64(size), ModTime: time.Now().UTC(), Chunks: chunks,
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(sum),
	}
	mm := nats.NewMsg("$O." + Bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(oi.Name)))
	mm.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if mm.Data, err = json.Marshal(oi); err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: %w", name, err)
	}
	if _, err := s.pub.PublishMsg(ctx, mm); err != nil {
		return Info{}, fmt.Errorf("artifact: put %s: metadata: %w", name, err)
	}
	return Info{Name: name, Size: size, SHA256: hexSum, Object: oi.Name, Meta: o.Meta}, nil
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

func digestOf(sum string) string {
	b, _ := hex.DecodeString(sum)
	return "SHA-256=" + base64.URLEncoding.EncodeToString(b)
}

// Open returns a reader of the artifact with sha256 sum and size, found
// by object (empty: ContentName(sum)). The
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
	oi, err := s.obs.GetInfo(ctx, object)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: sha256 %s (object %s)", ErrNotFound, sum, object)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	if oi.Digest != digestOf(sum) || int64(oi.Size) != size || oi.NUID == "" || strings.ContainsAny(oi.NUID, ".*> ") {
		return nil, fmt.Errorf("%w: object %s says %d bytes, %s; the ledger recorded %d bytes, sha256 %s",
			ErrTampered, object, oi.Size, oi.Digest, size, sum)
	}
	cr := &chunkReader{left: oi.Chunks}
	if oi.Chunks > 0 {
		cons, err := s.js.OrderedConsumer(ctx, BucketStream, jetstream.OrderedConsumerConfig{
			FilterSubjects:    []string{"$O." + Bucket + ".C." + oi.NUID},
			InactiveThreshold: consumerIdle})
		if err != nil {
			return nil, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
		}
		// A pull of at most getWindow bytes at a time: what the reader
		// holds, whatever the object's size.
		cr.it, err = cons.Messages(jetstream.PullMaxBytes(getWindow))
		if err != nil {
			return nil, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
		}
		cr.ctx = ctx
	}
	return &verifier{r: cr, h: sha256.New(), want: sum, size: size}, nil
}

// consumerIdle is how long the server keeps a Get's consumer once nothing
// pulls from it: a reader cannot delete it (no identity but an
// administrator may delete consumers), so it must not outlive the read
// by long (the ordered consumer's default is five minutes: a busy node's
// gets would pile up consumers on the server).
const consumerIdle = 5 * time.Second

// getWindow bounds the bytes a Get has pulled and not yet read.
const getWindow = 4 << 20

// chunkWait bounds the wait for one chunk: chunks pruned under a reader
// (the bucket's age limit) end the read instead of holding it.
const chunkWait = 30 * time.Second

// chunkReader reads an object's chunks in order from an ordered
// consumer.
type chunkReader struct {
	ctx  context.Context
	it   jetstream.MessagesContext
	cur  []byte
	left uint32
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.left == 0 {
			return 0, io.EOF
		}
		nctx, cancel := context.WithTimeout(c.ctx, chunkWait)
		m, err := c.it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if c.ctx.Err() != nil {
				return 0, c.ctx.Err()
			}
			return 0, fmt.Errorf("%w: chunk %d missing: %w", ErrTampered, c.left, err)
		}
		c.cur = m.Data()
		c.left--
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *chunkReader) Close() error {
	if c.it != nil {
		c.it.Stop()
	}
	return nil
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
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }

// Get copies the verified artifact to w, and returns how many bytes it
// wrote. On ErrTampered w has received unverified bytes: write to a file
// with GetFile, or through a verified temporary copy with GetVerified,
// where that matters.
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

// GetVerified copies the artifact to w only once the whole of it
// verified: it is first written to a temporary file in tmpDir
// (os.TempDir() if empty) — removed at once where the system allows, so
// nothing is left even if the process is killed, and in any case before
// it returns — then, verified, copied to w. On an error w has received
// nothing. It needs the artifact's size free in tmpDir, not in memory.
// The Object Store keeps one digest per object, none per chunk: only the
// whole object can be verified, so this is how a writer that cannot be
// taken back (standard output) receives verified bytes alone.
func (s *Store) GetVerified(ctx context.Context, sum string, size int64, object, tmpDir string, w io.Writer) (int64, error) {
	if tmpDir == "" {
		tmpDir = os.TempDir()
	}
	f, err := os.CreateTemp(tmpDir, ".agentic-artifact-*")
	if err != nil {
		return 0, fmt.Errorf("artifact: get sha256 %s: a temporary copy to verify: %w", sum, err)
	}
	name := f.Name()
	// Unlinked while open (POSIX): a kill leaves nothing behind. Where
	// that fails (Windows) the deferred Remove does it.
	removed := os.Remove(name) == nil
	defer func() {
		f.Close()
		if !removed {
			os.Remove(name)
		}
	}()
	if _, err := s.Get(ctx, sum, size, object, f); err != nil {
		return 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("artifact: get sha256 %s: the temporary copy: %w", sum, err)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return n, fmt.Errorf("artifact: get sha256 %s: %w", sum, err)
	}
	if n != size {
		return n, fmt.Errorf("artifact: get sha256 %s: the temporary copy in %s held %d bytes, %d were verified", sum, tmpDir, n, size)
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

// Stat returns what the bucket says of the object of sum (its size,
// the name it was last put with, its metadata), or ErrNotFound.
func (s *Store) Stat(ctx context.Context, sum string) (Info, error) {
	oi, err := s.obs.GetInfo(ctx, ContentName(sum))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Info{}, fmt.Errorf("%w: sha256 %s", ErrNotFound, sum)
	}
	if err != nil {
		return Info{}, fmt.Errorf("artifact: stat sha256 %s: %w", sum, err)
	}
	return Info{Name: oi.Description, Size: int64(oi.Size), SHA256: sum, Object: oi.Name, Meta: oi.Metadata}, nil
}
