package tracing

import (
	"crypto/sha256"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// derive hashes the parts into n bytes, never all zero.
func derive(n int, parts ...string) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	b := h.Sum(nil)[:n]
	for _, c := range b {
		if c != 0 {
			return b
		}
	}
	b[n-1] = 1
	return b
}

// TraceID is the trace id of a run whose goal carries no traceparent.
func TraceID(run string) trace.TraceID {
	return trace.TraceID(derive(16, "agentic/trace", run))
}

// RunSpanID is the id of a run's root span.
func RunSpanID(run string) trace.SpanID {
	return trace.SpanID(derive(8, "agentic/run", run))
}

// AttemptSpanID is the id of the span of a step's attempt.
func AttemptSpanID(run, step string, attempt int) trace.SpanID {
	return trace.SpanID(derive(8, "agentic/attempt", run, step, strconv.Itoa(attempt)))
}

// ToolSpanID is the id of the tool call of a step's attempt.
func ToolSpanID(run, step string, attempt int) trace.SpanID {
	return trace.SpanID(derive(8, "agentic/tool", run, step, strconv.Itoa(attempt)))
}

// PlanSpanID is the id of the model call that proposed a run's plan
// revision.
func PlanSpanID(run string, revision int) trace.SpanID {
	return trace.SpanID(derive(8, "agentic/plan", run, strconv.Itoa(revision)))
}

// CritiqueSpanID is the id of the model call that judged a critique
// step's attempt.
func CritiqueSpanID(run, step string, attempt int) trace.SpanID {
	return trace.SpanID(derive(8, "agentic/critique", run, step, strconv.Itoa(attempt)))
}
