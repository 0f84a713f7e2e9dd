package artifact_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// benchSize is the file of BenchmarkThroughput: 64 MiB, what the raw
// Object Store Put still stores on a server that syncs every write (its
// 4,000 chunks in flight overflow the server's 128 MiB buffer beyond
// that; the store's Put has no such limit, see TestLargeRoundTrip).
const benchSize = 64 << 20

// BenchmarkThroughput puts and gets the same file, from disk to disk,
// through the artifact store and through nats.go's Object Store in the
// same run, alternating, and reports each's MB/s and the ratios
// (artifact ÷ raw; the target is ≥ 0.8).
func BenchmarkThroughput(b *testing.B) {
	c := bustest.Connect(b, bustest.Server(b))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	st, err := artifact.Open(ctx, c.JS)
	if err != nil {
		b.Fatal(err)
	}
	obs, err := c.JS.ObjectStore(ctx, artifact.Bucket)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "src.bin")
	data := make([]byte, benchSize)
	rand.NewChaCha8([32]byte{9}).Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	data = nil
	var artPut, artGet, rawPut, rawGet time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Raw: nats.go's Put from the file, Get into a file.
		t0 := time.Now()
		f, _ := os.Open(src)
		raw, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "raw/" + string(rune('a'+i%26))}, f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		rawPut += time.Since(t0)
		t0 = time.Now()
		res, err := obs.Get(ctx, raw.Name)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := os.Create(filepath.Join(dir, "raw.out"))
		if _, err := io.Copy(out, res); err != nil {
			b.Fatal(err)
		}
		out.Close()
		res.Close()
		rawGet += time.Since(t0)

		// The store: PutFile, GetFile (verified, renamed into place).
		t0 = time.Now()
		info, err := st.PutFile(ctx, "src.bin", src, artifact.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		artPut += time.Since(t0)
		t0 = time.Now()
		if err := st.GetFile(ctx, info.SHA256, info.Size, info.Object, filepath.Join(dir, "art.out"), 0); err != nil {
			b.Fatal(err)
		}
		artGet += time.Since(t0)
	}
	b.StopTimer()
	a, _ := os.ReadFile(filepath.Join(dir, "art.out"))
	r, _ := os.ReadFile(filepath.Join(dir, "raw.out"))
	if !bytes.Equal(a, r) || len(a) != benchSize {
		b.Fatal("the two round trips wrote different files")
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * benchSize / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(artPut), "store-put-MB/s")
	b.ReportMetric(mbps(rawPut), "raw-put-MB/s")
	b.ReportMetric(mbps(artGet), "store-get-MB/s")
	b.ReportMetric(mbps(rawGet), "raw-get-MB/s")
	b.ReportMetric(rawPut.Seconds()/artPut.Seconds(), "put-ratio")
	b.ReportMetric(rawGet.Seconds()/artGet.Seconds(), "get-ratio")
	b.ReportMetric((rawPut+rawGet).Seconds()/(artPut+artGet).Seconds(), "ratio")
}
