package main_test

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/roles/orchestrator/tracing"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes every export
// with the official protobuf types and keeps every span it gets, copies
// included.
type otlpReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*tracepb.Span
	svc map[string]bool // service.name of the resources seen
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{svc: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					r.svc[kv.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.got = append(r.got, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// spans returns the spans received, by span id (hex), each id's copies.
func (r *otlpReceiver) spans() map[string][]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string][]*tracepb.Span{}
	for _, s := range r.got {
		id := hex.EncodeToString(s.SpanId)
		m[id] = append(m[id], s)
	}
	return m
}

// TestTracesOverOTLPAcrossKill9: a real agentd with OTEL_EXPORTER_OTLP_ENDPOINT
// set exports a run submitted under a CI job's traceparent to a real
// OTLP/HTTP receiver; killed with SIGKILL mid-run and restarted, it
// continues the same trace: every span of the run, before and after the
// kill, is in the submitter's trace under the run's root span, with the
// ids derived from (run, step, attempt), and a span exported twice is the
// same span twice.
func TestTracesOverOTLPAcrossKill9(t *testing.T) {
	requireE2E(t)
	rcv := newOTLPReceiver(t)
	a := newAgentd(t)
	a.env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.srv.URL, "OTEL_SERVICE_NAME=agentd-e2e", "OTEL_BSP_SCHEDULE_DELAY=100"}
	a.start()
	a.waitReady()

	const parentTrace, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	id := strings.TrimSpace(a.mustCtl("goal", "submit", "-f", testdata("resume-idempotent.yaml"),
		"--traceparent", "00-"+parentTrace+"-"+parentSpan+"-01"))
	a.waitStepRunning(id, "b")
	// Step a's span reaches the receiver before the kill.
	aSpan := hex.EncodeToString(func() []byte { s := tracing.AttemptSpanID(id, "a", 1); return s[:] }())
	if err := poll.Wait(10*time.Second, func() bool { return len(rcv.spans()[aSpan]) > 0 }); err != nil {
		t.Fatalf("%v waiting for step a's span before the kill; got %d spans", err, len(rcv.spans()))
	}
	a.kill9()
	a.restart()
	if v := a.waitRun(id, 60*time.Second); v.Status != "succeeded" {
		t.Fatalf("the run did not succeed after the restart:\n%s", v.dump())
	}

	root := tracing.RunSpanID(id)
	want := map[string]string{ // span id → name
		hex.EncodeToString(root[:]): "run",
		aSpan:                       "step a",
	}
	for _, sa := range []struct {
		step    string
		attempt int
	}{{"b", 1}, {"b", 2}, {"c", 1}} {
		s := tracing.AttemptSpanID(id, sa.step, sa.attempt)
		want[hex.EncodeToString(s[:])] = "step " + sa.step
	}
	var got map[string][]*tracepb.Span
	if err := poll.Wait(20*time.Second, func() bool {
		got = rcv.spans()
		for sid := range want {
			if len(got[sid]) == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		var names []string
		for _, c := range got {
			names = append(names, c[0].Name)
		}
		t.Fatalf("%v waiting for the run's spans; got %v", err, names)
	}
	for sid, name := range want {
		for _, s := range got[sid] {
			if hex.EncodeToString(s.TraceId) != parentTrace {
				t.Errorf("%s (%s) is in trace %x, want the submitter's %s", name, sid, s.TraceId, parentTrace)
			}
			wantParent := hex.EncodeToString(root[:])
			if name == "run" {
				wantParent = parentSpan
			}
			if p := hex.EncodeToString(s.ParentSpanId); p != wantParent {
				t.Errorf("%s's parent is %s, want %s", name, p, wantParent)
			}
			if s.Name != name {
				t.Errorf("span %s is named %q, want %q", sid, s.Name, name)
			}
		}
		if c := got[sid]; len(c) > 1 {
			for _, dup := range c[1:] {
				if dup.StartTimeUnixNano != c[0].StartTimeUnixNano || dup.EndTimeUnixNano != c[0].EndTimeUnixNano || !bytes.Equal(dup.ParentSpanId, c[0].ParentSpanId) {
					t.Errorf("%s exported twice with different content: %v vs %v", name, c[0], dup)
				}
			}
		}
	}
	// Attempt 1 of b, cut short by the kill, ended in error; attempt 2 not.
	b1 := tracing.AttemptSpanID(id, "b", 1)
	if s := got[hex.EncodeToString(b1[:])][0]; s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("step b attempt 1: status %v, want error", s.GetStatus())
	}
	rcv.mu.Lock()
	svc := rcv.svc["agentd-e2e"]
	rcv.mu.Unlock()
	if !svc {
		t.Errorf("no resource with service.name agentd-e2e (OTEL_SERVICE_NAME); got %v", rcv.svc)
	}
}

// waitStepRunning polls the run until step is running.
func (a *agentd) waitStepRunning(id, step string) {
	a.t.Helper()
	var last runView
	if err := poll.Wait(30*time.Second, func() bool {
		v, err := a.tryRunShow(id)
		if err != nil {
			return false
		}
		last = v
		s, ok := v.lookup(step)
		return ok && s.Status == "running"
	}); err != nil {
		a.t.Fatalf("%v waiting for step %s running; last view:\n%s", err, step, last.dump())
	}
}
