package artifact_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/nats-io/nats.go/jetstream"
)

func open(t *testing.T) (*artifact.Store, jetstream.JetStream) {
	t.Helper()
	c := bustest.Connect(t, bustest.Server(t))
	st, err := artifact.Open(context.Background(), c.JS)
	if err != nil {
		t.Fatal(err)
	}
	return st, c.JS
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestPutGetRoundTrip(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	for _, n := range []int{0, 1, 128 << 10, 300<<10 + 7} {
		data := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		info, err := st.Put(ctx, "out.bin", bytes.NewReader(data), artifact.PutOptions{Meta: map[string]string{"url": "http://x/"}})
		if err != nil {
			t.Fatalf("put %d: %v", n, err)
		}
		if info.SHA256 != sum(data) || info.Size != int64(n) || info.Object != artifact.ContentName(info.SHA256) {
			t.Fatalf("put %d: info %+v, want sha256 %s", n, info, sum(data))
		}
		var out bytes.Buffer
		if _, err := st.Get(ctx, info.SHA256, info.Size, "", &out); err != nil {
			t.Fatalf("get %d: %v", n, err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("get %d: bytes differ", n)
		}
		got, err := st.Stat(ctx, info.SHA256)
		if err != nil || got.Object != info.Object || got.Meta["url"] != "http://x/" || got.Name != "out.bin" {
			t.Fatalf("stat %d: %+v, %v", n, got, err)
		}
	}
}

func TestPutRefusesOverCap(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	if _, err := st.Put(ctx, "big", bytes.NewReader(make([]byte, 1001)), artifact.PutOptions{MaxSize: 1000}); !errors.Is(err, artifact.ErrTooLarge) {
		t.Fatalf("put over the cap: %v, want ErrTooLarge", err)
	}
	if _, err := st.Put(ctx, "fits", bytes.NewReader(make([]byte, 1000)), artifact.PutOptions{MaxSize: 1000}); err != nil {
		t.Fatalf("put at the cap: %v", err)
	}
}

// TestGetRefusesTampered replaces an upload's bytes (and its metadata's
// digest with them, as anyone who can write the bucket can) and then its
// chunks alone: both are refused, and GetFile leaves nothing at its path.
func TestGetRefusesTampered(t *testing.T) {
	st, js := open(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("good bytes "), 30000)
	info, err := st.Put(ctx, "report.md", bytes.NewReader(data), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, artifact.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 1
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: info.Object}, bytes.NewReader(bad)); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "report.md")
	err = st.GetFile(ctx, info.SHA256, info.Size, "", dst, 0)
	if !errors.Is(err, artifact.ErrTampered) {
		t.Fatalf("get of a replaced object: %v, want ErrTampered", err)
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Fatalf("a refused get left %s: %v", dst, serr)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
		t.Fatalf("a refused get left %v", ents)
	}

	// Chunks alone: the metadata keeps the recorded digest and size, the
	// chunks it points at are other bytes.
	other, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "other"}, bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	forged := *other
	forged.Name = info.Object
	forged.Digest = "SHA-256=" + b64(data)
	forged.Size = uint64(len(data))
	if err := publishMeta(ctx, js, &forged); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := st.Get(ctx, info.SHA256, info.Size, "", &out); !errors.Is(err, artifact.ErrTampered) {
		t.Fatalf("get of forged chunks: %v, want ErrTampered", err)
	}
	// Through a verified temporary copy: nothing reaches the writer, and
	// the copy is gone.
	tmp := t.TempDir()
	out.Reset()
	if _, err := st.GetVerified(ctx, info.SHA256, info.Size, "", tmp, &out); !errors.Is(err, artifact.ErrTampered) || out.Len() != 0 {
		t.Fatalf("verified get of forged chunks: %v, %d bytes written; want ErrTampered and none", err, out.Len())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("a refused verified get left %v", ents)
	}
}

// TestGetVerified: bytes that verify reach the writer whole, and the
// temporary copy is gone.
func TestGetVerified(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("verified first "), 20000)
	info, err := st.Put(ctx, "v.bin", bytes.NewReader(data), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	var out bytes.Buffer
	if n, err := st.GetVerified(ctx, info.SHA256, info.Size, "", tmp, &out); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("verified get: %d bytes, %v", n, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("a verified get left %v", ents)
	}
}

func TestEnsureKeepsBucket(t *testing.T) {
	_, js := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, artifact.BucketStream)
	if err != nil {
		t.Fatalf("bus.EnsureStreams made no artifact bucket: %v", err)
	}
	if s.CachedInfo().Config.MaxAge != artifact.DefaultMaxAge || s.CachedInfo().Config.Replicas != 1 {
		t.Fatalf("bucket config %+v", s.CachedInfo().Config)
	}
	if err := artifact.Ensure(ctx, js, artifact.Config{Replicas: 1, MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	s, _ = js.Stream(ctx, artifact.BucketStream)
	if s.CachedInfo().Config.MaxAge != artifact.DefaultMaxAge {
		t.Fatal("Ensure changed an existing bucket")
	}
}

// TestPutsLeaveNoSubscription: Puts share one reply subscription for
// their acknowledgements; the connection holds no more after a hundred
// than after one.
func TestPutsLeaveNoSubscription(t *testing.T) {
	c := bustest.Connect(t, bustest.Server(t))
	ctx := context.Background()
	st, err := artifact.Open(ctx, c.JS)
	if err != nil {
		t.Fatal(err)
	}
	put := func(i int) {
		if _, err := st.Put(ctx, "n", bytes.NewReader([]byte{byte(i), byte(i >> 8)}), artifact.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put(0)
	after1 := c.NC.NumSubscriptions()
	for i := 1; i <= 100; i++ {
		put(i)
	}
	if n := c.NC.NumSubscriptions(); n > after1 {
		t.Fatalf("%d subscriptions after 101 puts, %d after one", n, after1)
	}
}

// TestGetsLeaveNothing: a Get, read to its end and closed, leaves no
// subscription behind, and its consumer is gone from the server soon
// after (consumerIdle).
func TestGetsLeaveNothing(t *testing.T) {
	c := bustest.Connect(t, bustest.Server(t))
	ctx := context.Background()
	st, err := artifact.Open(ctx, c.JS)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("g"), 300<<10)
	info, err := st.Put(ctx, "g", bytes.NewReader(data), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		if _, err := st.Get(ctx, info.SHA256, info.Size, "", io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	get()
	subs := c.NC.NumSubscriptions()
	for range 20 {
		get()
	}
	consumers := func() int {
		s, err := c.JS.Stream(ctx, artifact.BucketStream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().State.Consumers
	}
	if err := poll.Wait(20*time.Second, func() bool { return c.NC.NumSubscriptions() <= subs && consumers() == 0 }); err != nil {
		t.Fatalf("after 21 gets: %d subscriptions (%d after one), %d consumers on the bucket",
			c.NC.NumSubscriptions(), subs, consumers())
	}
}

// TestReserveConcurrent: reservations of one run made at once never
// pass its cap together; what is released can be reserved again; the
// ledger's figure counts when the reserved total is below it.
func TestReserveConcurrent(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	const each, limit = 100, 550
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, full := 0, 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Reserve(ctx, "run-1", each, 0, limit)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, artifact.ErrRunFull) && errors.Is(err, artifact.ErrTooLarge):
				full++
			default:
				t.Errorf("reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 5 || full != 5 {
		t.Fatalf("%d reservations made, %d refused; want 5 and 5", ok, full)
	}
	if n, err := st.Reserved(ctx, "run-1"); err != nil || n != 500 {
		t.Fatalf("reserved %d, %v; want 500", n, err)
	}
	if err := st.Release(ctx, "run-1", 200); err != nil {
		t.Fatal(err)
	}
	if n, err := st.Reserve(ctx, "run-1", 250, 0, limit); err != nil || n != 550 {
		t.Fatalf("reserve after a release: %d, %v", n, err)
	}
	// Another run has its own total; the ledger's figure is a floor.
	if _, err := st.Reserve(ctx, "run-2", 100, 500, limit); !errors.Is(err, artifact.ErrRunFull) {
		t.Fatalf("reserve past what the ledger recorded: %v", err)
	}
	if _, err := st.Reserve(ctx, "bad.run", 1, 0, limit); err == nil {
		t.Fatal("a run id with a dot was accepted")
	}
}
