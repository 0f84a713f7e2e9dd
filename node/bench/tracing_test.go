package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracingPairs is how many alternating on/off pairs BenchmarkNoopStepsTracing
// runs: the ratio reported is their median.
const tracingPairs = 5

// BenchmarkNoopStepsTracing is the cost of tracing (docs/telemetry.md):
// the noop plan of BenchmarkNoopSteps2000 on a fresh node with trace
// export on (OTEL_EXPORTER_OTLP_ENDPOINT set to a local OTLP/HTTP
// receiver that decodes every export) and off, in tracingPairs
// alternating pairs (on first in even pairs, off first in odd ones, so
// that a drift of the machine weighs on both). Reported: steps/s of each
// (medians), the median of the pairs' on/off ratios (target ≥ 0.95), and
// the spans the receiver decoded per traced run (a span per step and the
// run's).
func BenchmarkNoopStepsTracing(b *testing.B) {
	steps := noopLayers * noopWidth
	file := noopPlan(noopLayers, noopWidth)
	var spans atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var msg coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans.Add(int64(len(ss.Spans)))
			}
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer rcv.Close()
	one := func(on bool) float64 {
		if on {
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		} else {
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		}
		bn := startNode(b, noopSlots)
		r := runNoopPlan(b, bn, file, steps)
		bn.Stop(b) // flushes the spans batched
		return float64(steps) / r.took.Seconds()
	}
	var on, off, ratios []float64
	for b.Loop() {
		for i := range tracingPairs {
			var a, c float64
			if i%2 == 0 {
				a = one(true)
				c = one(false)
			} else {
				c = one(false)
				a = one(true)
			}
			on, off, ratios = append(on, a), append(off, c), append(ratios, a/c)
			b.Logf("pair %d: traced %.0f steps/s, untraced %.0f steps/s, ratio %.3f", i+1, a, c, a/c)
		}
	}
	slices.Sort(ratios)
	b.ReportMetric(median(on), "traced_steps/s")
	b.ReportMetric(median(off), "untraced_steps/s")
	b.ReportMetric(ratios[len(ratios)/2], "on_off_ratio_median")
	b.ReportMetric(float64(spans.Load())/float64(len(on)), "spans/traced_run")
	b.ReportMetric(0, "ns/op")
	if got := spans.Load() / int64(len(on)); got < int64(steps) {
		b.Fatalf("the receiver decoded %d spans per traced run, want at least %d (one per step)", got, steps)
	}
}
