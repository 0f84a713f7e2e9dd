package ledger_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
)

// BenchmarkAppend measures Append with 1, 64 and 512 events per commit (one
// message each, Sync on every commit), 256-byte payloads. Signing and
// verification are the follower's cost and are left out.
func BenchmarkAppend(b *testing.B) {
	data, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 244))})
	for _, size := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			st, err := ledger.Open(b.TempDir(), quietOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			raw := bytes.Repeat([]byte("j"), 300*size)
			now := time.Now().UTC()
			seq := uint64(0)
			for b.Loop() {
				seq++
				prefix := "e" + strconv.FormatUint(seq, 10) + "-"
				m := ledger.Message{
					StreamSeq: seq, Subject: "agentic.ev.task.started", Time: now,
					Raw: raw, EnvelopeID: "m" + strconv.FormatUint(seq, 10),
					Events: make([]event.Event, size),
				}
				for i := range m.Events {
					m.Events[i] = event.Event{
						ID: prefix + strconv.Itoa(i), Type: event.TaskStarted, Run: "run-1", Node: "n1",
						Time: now, Subject: m.Subject, Data: data,
					}
				}
				if _, err := st.Append([]ledger.Message{m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
