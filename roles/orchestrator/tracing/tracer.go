package tracing

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentic-dev/agentic/bus/event"
)

// Defaults of Options.
const (
	// DefaultBackfill is how far back a node that takes the lead exports
	// the spans it made while it did not lead.
	DefaultBackfill = 10 * time.Minute
	// MaxBacklog bounds the spans a node keeps while it does not lead
	// (the oldest go first).
	MaxBacklog = 4096
	// MaxRuns bounds the runs whose context the tracer keeps.
	MaxRuns = 10_000
)

// InstrumentationName is the tracer's instrumentation scope.
const InstrumentationName = "github.com/agentic-dev/agentic/roles/orchestrator/tracing"

// Options tune a Tracer; the zero value is the defaults.
type Options struct {
	// Logger receives the exporter's errors; nil: slog.Default().
	Logger *slog.Logger
	// Now is the clock Backfill is measured with; nil: time.Now.
	Now func() time.Time
	// Backfill is DefaultBackfill when zero.
	Backfill time.Duration
	// Resource describes the service; nil: service.name "agentd" and the
	// OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES environment.
	Resource *resource.Resource
	// Sync exports each span as it ends (tests); otherwise spans are
	// batched.
	Sync bool
}

// Tracer turns the events the leader folds into spans (see the package
// doc). Observe is called from one goroutine; Stop from any.
type Tracer struct {
	tp       *sdktrace.TracerProvider
	tr       trace.Tracer
	log      *slog.Logger
	now      func() time.Time
	backfill time.Duration

	runs    map[string]*runInfo
	backlog ring
	led     bool

	// Unless Options.Sync, Observe hands events to one goroutine of the
	// tracer's own (work), off the orchestrator's owner goroutine, which
	// folds and decides for the whole cluster: spans cost it a channel
	// send per event.
	mu     sync.RWMutex // held to send on in; Stop takes it to close in
	in     chan observed
	closed bool
	done   chan struct{} // closed when work returns
}

// observed is an event Observe was handed, or (flush non-nil) a marker
// ForceFlush waits for.
type observed struct {
	ev    event.Event
	leads bool
	flush chan struct{}
}

// queueLen is how many observed events wait for the tracer's goroutine
// before Observe blocks (a burst of a large plan's events).
const queueLen = 16384

// FromEnv returns a Tracer exporting over OTLP/HTTP as the standard
// OpenTelemetry environment configures it (see the package doc), or nil
// when that environment turns no trace export on. service is the
// service.name unless OTEL_SERVICE_NAME says otherwise.
func FromEnv(ctx context.Context, getenv func(string) string, service string, logger *slog.Logger) (*Tracer, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP/HTTP exporter: %w", err)
	}
	res, err := Resource(ctx, service)
	if err != nil {
		return nil, err
	}
	return New(exp, Options{Logger: logger, Resource: res}), nil
}

// Enabled reports whether the environment turns trace export on: an OTLP
// endpoint set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true
// nor OTEL_TRACES_EXPORTER=none.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" && e != "otlp" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Resource is service (service.name) with the SDK's attributes and what
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say, which win.
func Resource(ctx context.Context, service string) (*resource.Resource, error) {
	// No schema URL of ours: the SDK's detector brings its own, and two
	// would conflict.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// New returns a Tracer exporting to exp (an OTLP exporter, or an
// in-memory one in tests).
func New(exp sdktrace.SpanExporter, o Options) *Tracer {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Backfill <= 0 {
		o.Backfill = DefaultBackfill
	}
	if o.Resource == nil {
		res, err := Resource(context.Background(), "agentd")
		if err != nil {
			o.Logger.Warn("tracing: the resource could not be made; the SDK's default is used", "err", err)
			res = resource.Default()
		}
		o.Resource = res
	}
	var proc sdktrace.SpanProcessor
	if o.Sync {
		proc = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		proc = sdktrace.NewBatchSpanProcessor(exp) // starts its goroutine: Stop ends it
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(proc),
		sdktrace.WithIDGenerator(derivedIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithResource(o.Resource),
	)
	t := &Tracer{
		tp: tp, tr: tp.Tracer(InstrumentationName, trace.WithSchemaURL(semconv.SchemaURL)),
		log: o.Logger.With("component", "tracing"), now: o.Now, backfill: o.Backfill,
		runs: map[string]*runInfo{}, backlog: ring{buf: make([]span, MaxBacklog)},
	}
	if !o.Sync {
		t.in, t.done = make(chan observed, queueLen), make(chan struct{})
		go t.work() // Stop ends it
	}
	return t
}

// work folds and exports the events Observe queued, in their order,
// until Stop closes the queue.
func (t *Tracer) work() {
	defer close(t.done)
	for o := range t.in {
		if o.flush != nil {
			close(o.flush)
			continue
		}
		t.observe(o.ev, o.leads)
	}
}

// Observe folds one committed event; leads says whether this node leads
// and is live (the orchestrator's owner knows). The spans the event
// completes are exported when it leads, kept in the backlog otherwise;
// the first event observed after taking the lead exports the backlog's
// spans that ended within Backfill.
func (t *Tracer) Observe(ev event.Event, leads bool) {
	if t == nil {
		return
	}
	if t.in == nil {
		t.observe(ev, leads)
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.closed {
		t.in <- observed{ev: ev, leads: leads}
	}
}

// observe folds one event into spans and exports or keeps them.
func (t *Tracer) observe(ev event.Event, leads bool) {
	if leads && !t.led {
		t.flushBacklog()
	}
	t.led = leads
	for _, s := range t.fold(ev) {
		if leads {
			t.export(s)
		} else {
			t.backlog.push(s)
		}
	}
}

// Stop exports what is batched and shuts the exporter down.
func (t *Tracer) Stop(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if t.in != nil {
		t.mu.Lock()
		if !t.closed {
			t.closed = true
			close(t.in)
		}
		t.mu.Unlock()
		select {
		case <-t.done:
		case <-ctx.Done():
			return fmt.Errorf("tracing: stop: %w", ctx.Err())
		}
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: stop: %w", err)
	}
	return nil
}

// ForceFlush exports what is batched now.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if t.in != nil {
		// What was observed before this call is folded first.
		mark := make(chan struct{})
		t.mu.RLock()
		if !t.closed {
			t.in <- observed{flush: mark}
		} else {
			close(mark)
		}
		t.mu.RUnlock()
		select {
		case <-mark:
		case <-ctx.Done():
			return fmt.Errorf("tracing: flush: %w", ctx.Err())
		}
	}
	return t.tp.ForceFlush(ctx)
}

func (t *Tracer) flushBacklog() {
	since := t.now().Add(-t.backfill)
	n := 0
	for s := range t.backlog.drain() {
		if s.end.After(since) {
			t.export(s)
			n++
		}
	}
	if n > 0 {
		t.log.Info("spans exported again after taking the lead", "spans", n)
	}
}

// span is a finished span as the ledger describes it.
type span struct {
	name    string
	kind    trace.SpanKind
	traceID trace.TraceID
	parent  trace.SpanID // zero: a root
	id      trace.SpanID
	start   time.Time
	end     time.Time
	attrs   []attribute.KeyValue
	failed  bool
	desc    string
}

// export hands s to the SDK with its derived ids.
func (t *Tracer) export(s span) {
	ctx := context.WithValue(context.Background(), idsKey{}, ids{trace: s.traceID, span: s.id})
	if s.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: s.traceID, SpanID: s.parent, TraceFlags: trace.FlagsSampled, Remote: true,
		}))
	}
	_, sp := t.tr.Start(ctx, s.name, trace.WithTimestamp(s.start), trace.WithSpanKind(s.kind), trace.WithAttributes(s.attrs...))
	if s.failed {
		sp.SetStatus(codes.Error, s.desc)
	}
	sp.End(trace.WithTimestamp(s.end))
}

// idsKey carries the ids of the span being started to derivedIDs.
type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// derivedIDs gives the SDK the ids export put in the context.
type derivedIDs struct{}

func (derivedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.trace, v.span
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	return tid, sid
}

func (derivedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.span
	}
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}

// ring is the bounded backlog: the newest MaxBacklog spans.
type ring struct {
	buf  []span
	head int // next write
	n    int
}

func (r *ring) push(s span) {
	r.buf[r.head] = s
	r.head = (r.head + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
}

// drain yields the spans oldest first and empties the ring.
func (r *ring) drain() func(func(span) bool) {
	return func(yield func(span) bool) {
		start := (r.head - r.n + len(r.buf)) % len(r.buf)
		n := r.n
		r.n = 0
		for i := range n {
			s := r.buf[(start+i)%len(r.buf)]
			r.buf[(start+i)%len(r.buf)] = span{}
			if !yield(s) {
				return
			}
		}
	}
}
