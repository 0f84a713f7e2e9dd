package artifact_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
)

// largeSize is the size of the round trip's file: 200 MB.
const largeSize = 200 << 20

// Bounds of the client's memory during the round trip: its live heap and
// its resident set may grow by at most these, a quarter and a half of the
// file (a whole copy would be 200 MiB). Measured here: 23–32 MiB of heap,
// most of it nats.go's buffers of the chunks pulled (the store's windows
// are 4 MiB each way), and 30–35 MiB of RSS.
const (
	heapBound = 48 << 20
	rssBound  = 96 << 20
)

// randReader yields n pseudo-random bytes from seed, holding none.
type randReader struct {
	r *rand.ChaCha8
	n int64
}

func (r *randReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	r.r.Read(p)
	r.n -= int64(len(p))
	return len(p), nil
}

// peak samples the live heap — what is held, not the garbage a GC has
// yet to collect — until stop, and returns the highest.
func peak(stop <-chan struct{}) func() uint64 {
	var hi atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > hi.Load() {
				hi.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { wg.Wait(); return hi.Load() }
}

// procStatus reads a kB figure of /proc/self/status (VmRSS, VmHWM), in
// bytes; 0 where unknown.
func procStatus(key string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// roundTrip is what the client process reports.
type roundTrip struct {
	SHA256       string        `json:"sha256"`
	HeapGrowth   int64         `json:"heap_growth"`
	RSSBase      uint64        `json:"rss_base"`
	RSSPeak      uint64        `json:"rss_peak"`
	FileSHA256   string        `json:"file_sha256"`
	GetDuration  time.Duration `json:"get"`
	PutDuration  time.Duration `json:"put"`
	ExpectSHA256 string        `json:"expect_sha256"`
}

// TestLargeRoundTrip: a 200 MB artifact goes in from a reader and comes
// back into a file byte-identical (same sha256), while the client's live
// heap and resident set grow by far less than the file. The client runs
// in a process of its own (this test binary again), so that what is
// measured is the store's, not the server's, which runs here.
func TestLargeRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB through JetStream")
	}
	srv := bustest.Server(t)
	bustest.Connect(t, srv) // the streams and the bucket
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ARTIFACT_TEST_URL="+srv.ClientURL(), "ARTIFACT_TEST_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	i := strings.LastIndex(string(out), "RESULT ")
	if i < 0 {
		t.Fatalf("client said:\n%s", out)
	}
	var r roundTrip
	if err := json.NewDecoder(strings.NewReader(string(out[i+len("RESULT "):]))).Decode(&r); err != nil {
		t.Fatal(err)
	}
	t.Logf("200 MB: put %s (%.0f MB/s), get %s (%.0f MB/s); client live heap grew %d MiB at its peak, RSS %d → %d MiB (peak)",
		r.PutDuration.Round(time.Millisecond), largeSize/1e6/r.PutDuration.Seconds(), r.GetDuration.Round(time.Millisecond),
		largeSize/1e6/r.GetDuration.Seconds(), r.HeapGrowth>>20, r.RSSBase>>20, r.RSSPeak>>20)
	if r.FileSHA256 != r.ExpectSHA256 || r.SHA256 != r.ExpectSHA256 {
		t.Fatalf("round trip: put %s, file %s, want %s", r.SHA256, r.FileSHA256, r.ExpectSHA256)
	}
	if r.HeapGrowth > heapBound {
		t.Errorf("the client's live heap grew by %d MiB for a %d MiB file: more than %d MiB", r.HeapGrowth>>20, largeSize>>20, heapBound>>20)
	}
	if r.RSSPeak > 0 && int64(r.RSSPeak)-int64(r.RSSBase) > rssBound {
		t.Errorf("the client's RSS grew by %d MiB for a %d MiB file: more than %d MiB", (r.RSSPeak-r.RSSBase)>>20, largeSize>>20, rssBound>>20)
	}
}

// largeClient is TestLargeRoundTrip's client process (TestMain runs it
// when ARTIFACT_TEST_URL is set): the round trip against the server at
// url, its result printed as a RESULT line.
func largeClient(url, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{url}, Name: "artifact-client"})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := artifact.Open(ctx, c.JS)
	if err != nil {
		return err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	r := roundTrip{RSSBase: procStatus("VmRSS")}
	stop := make(chan struct{})
	hi := peak(stop)
	h := sha256.New()
	src := io.TeeReader(&randReader{r: rand.NewChaCha8([32]byte{7}), n: largeSize}, h)
	start := time.Now()
	info, err := st.Put(ctx, "big.bin", src, artifact.PutOptions{MaxSize: 1 << 30})
	if err != nil {
		return err
	}
	r.PutDuration = time.Since(start)
	r.SHA256, r.ExpectSHA256 = info.SHA256, hex.EncodeToString(h.Sum(nil))
	dst := filepath.Join(dir, "big.bin")
	start = time.Now()
	if err := st.GetFile(ctx, info.SHA256, info.Size, info.Object, dst, 0); err != nil {
		return err
	}
	r.GetDuration = time.Since(start)
	close(stop)
	r.HeapGrowth = int64(hi()) - int64(base)
	r.RSSPeak = procStatus("VmHWM")
	f, err := os.Open(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	h2 := sha256.New()
	if _, err := io.Copy(h2, f); err != nil {
		return err
	}
	r.FileSHA256 = hex.EncodeToString(h2.Sum(nil))
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", b)
	return nil
}
