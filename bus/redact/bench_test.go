package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// output is ordinary step output: a build log.
var output = strings.Repeat("go: downloading github.com/nats-io/nats.go v1.37.0\n"+
	"ok  \tgithub.com/agentic-dev/agentic/bus/redact\t0.412s\tcoverage: 81.2% of statements\n"+
	"[INFO] compiled 120 files in 3.2s (cache hit 3f2a9c1e8b7d6f5a)\n", 200)

// eventPayload is a task.finished payload with a 4 KiB output tail.
func eventPayload(tail string) []byte {
	b, _ := json.Marshal(map[string]any{
		"step": "build", "attempt": 1, "node": "exec-1", "status": "failed", "class": "exit_nonzero",
		"exit_code": 2, "error": "exit status 2", "interrupted": false, "started": "2026-11-22T23:00:00Z",
		"duration": "3.2s", "cwd": "/srv/app", "output_tail": tail, "command_hash": "3f2a9c1e8b7d6f5a",
	})
	return b
}

// BenchmarkRedactEvent is the cost of redaction at creation per event
// (RedactJSON then Scan, what the outbox's Emit and the signer do), and of
// redacting step output as a stream, in MB/s.
func BenchmarkRedactEvent(b *testing.B) {
	clean := eventPayload(output[len(output)-4096:])
	leaky := eventPayload(output[len(output)-3900:] + "\nMYSQL_PWD=myPWvalue1 mysql -u root -pS3cretPW\ntoken ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
	for _, c := range []struct {
		name string
		data []byte
	}{{"event-small", []byte(`{"step":"build","attempt":1,"node":"exec-1","pid":4242}`)}, {"event-clean", clean}, {"event-secrets", leaky}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				out, _, err := RedactJSON(c.data)
				if err != nil {
					b.Fatal(err)
				}
				if _, found := Scan(out); found {
					b.Fatal("a secret survived")
				}
			}
		})
	}
	secrets := strings.Repeat(output[:2000]+"export DB_PASSWORD=hunter2 AKIAIOSFODNN7EXAMPLE sk_live_51H8xQ2LkdIwHu7ixyzAbCdEf0123\n", 20)
	for _, c := range []struct{ name, text string }{{"stream-clean", output}, {"stream-secrets", secrets}} {
		b.Run(c.name, func(b *testing.B) {
			const chunk = 32 << 10
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				s := NewStream()
				for i := 0; i < len(c.text); i += chunk {
					s.Write([]byte(c.text[i:min(i+chunk, len(c.text))]))
				}
				s.Flush()
			}
		})
	}
}

func BenchmarkRedactClean(b *testing.B) {
	line := strings.Repeat("compiling module foo/bar with 12 files, cache hit\n", 600)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		Redact(line)
	}
}
