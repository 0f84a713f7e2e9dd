package tracing_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator/tracing"
)

const run = "0190bbbb-0000-7000-8000-000000000003"

var t0 = time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)

type ledger struct {
	seq uint64
	evs []event.Event
}

func (l *ledger) add(at time.Duration, typ event.Type, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	l.seq++
	l.evs = append(l.evs, event.Event{Seq: l.seq, Type: typ, Run: run, Time: t0.Add(at), Data: b})
}

// twoExecutors is a run whose step build fails on node-a and succeeds on
// node-b (attempt 2), then a tool step on node-a; planned by a model and
// submitted with a CI job's traceparent when parent is set.
func twoExecutors(parent string) *ledger {
	l := &ledger{}
	l.add(0, event.GoalSubmitted, event.GoalSubmittedData{Goal: "ship", Text: "ship", TraceParent: parent})
	l.add(2*time.Second, event.PlanProposed, event.PlanProposedData{Revision: 1, Source: "llm",
		Planner: &event.PlannerInfo{Model: "qwen2.5-coder:7b", ServedModel: "qwen2.5-coder:7b-q4", Planner: "llm/1", Build: "v1", Template: "abc",
			PromptTokens: 1200, CompletionTokens: 300, Latency: event.Duration(1500 * time.Millisecond)}})
	l.add(3*time.Second, event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
	build := event.Step{ID: "build", Kind: event.KindShell, Run: "make"}
	l.add(4*time.Second, event.TaskAssigned, event.TaskAssignedData{Step: build, Attempt: 1, Node: "node-a"})
	l.add(5*time.Second, event.TaskStarted, event.TaskStartedData{Step: "build", Attempt: 1, Node: "node-a"})
	l.add(7*time.Second, event.TaskFinished, event.TaskFinishedData{Step: "build", Attempt: 1, Node: "node-a", Status: event.TaskFailed,
		Class: event.ClassTransient, ExitCode: 2, Error: "exit status 2", Started: t0.Add(5 * time.Second), Duration: event.Duration(2 * time.Second), CommandHash: "h1"})
	l.add(8*time.Second, event.GateOpened, event.GateOpenedData{Step: "build", Attempt: 2, Kind: event.GatePolicy, Verdict: &event.Verdict{Action: "confirm", Level: "high"}})
	l.add(9*time.Second, event.TaskAssigned, event.TaskAssignedData{Step: build, Attempt: 2, Node: "node-b"})
	l.add(12*time.Second, event.TaskFinished, event.TaskFinishedData{Step: "build", Attempt: 2, Node: "node-b", Status: event.TaskSucceeded,
		Started: t0.Add(10 * time.Second), Duration: event.Duration(2 * time.Second), CommandHash: "h1"})
	read := event.Step{ID: "read", Kind: event.KindTool, Tool: "fs/read_text_file"}
	l.add(13*time.Second, event.TaskAssigned, event.TaskAssignedData{Step: read, Attempt: 1, Node: "node-a"})
	l.add(14*time.Second, event.TaskFinished, event.TaskFinishedData{Step: "read", Attempt: 1, Node: "node-a", Status: event.TaskSucceeded,
		Started: t0.Add(13500 * time.Millisecond), Duration: event.Duration(500 * time.Millisecond)})
	l.add(15*time.Second, event.RunFinished, event.RunFinishedData{Status: event.RunSucceeded})
	return l
}

func newTracer(t *testing.T, now time.Time) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(exp, tracing.Options{Sync: true, Now: func() time.Time { return now }})
	t.Cleanup(func() { _ = tr.Stop(context.Background()) })
	return tr, exp
}

func byName(spans tracetest.SpanStubs) map[string][]tracetest.SpanStub {
	m := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = append(m[s.Name], s)
	}
	return m
}

func attr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestRunAcrossTwoExecutorsIsOneTrace: one trace, the run's root span,
// one span per attempt (on node-a and node-b) under it, the model call
// under the root and the tool call under its attempt, every id derived.
func TestRunAcrossTwoExecutorsIsOneTrace(t *testing.T) {
	tr, exp := newTracer(t, t0.Add(time.Minute))
	for _, ev := range twoExecutors("").evs {
		tr.Observe(ev, true)
	}
	spans := exp.GetSpans()
	if len(spans) != 6 {
		t.Fatalf("%d spans, want 6 (run, model call, 3 attempts, tool call): %v", len(spans), spans)
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != tracing.TraceID(run) {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.SpanContext.TraceID(), tracing.TraceID(run))
		}
	}
	m := byName(spans)
	root := m["run"]
	if len(root) != 1 || root[0].Parent.IsValid() || root[0].SpanContext.SpanID() != tracing.RunSpanID(run) ||
		!root[0].StartTime.Equal(t0) || !root[0].EndTime.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("root = %+v", root)
	}
	builds := m["step build"]
	if len(builds) != 2 {
		t.Fatalf("build spans = %v", builds)
	}
	for i, s := range builds {
		attempt := i + 1
		if s.Parent.SpanID() != tracing.RunSpanID(run) || s.SpanContext.SpanID() != tracing.AttemptSpanID(run, "build", attempt) {
			t.Errorf("attempt %d: parent %s id %s", attempt, s.Parent.SpanID(), s.SpanContext.SpanID())
		}
	}
	a1, a2 := builds[0], builds[1]
	if attr(a1, tracing.AttrNode).AsString() != "node-a" || attr(a2, tracing.AttrNode).AsString() != "node-b" {
		t.Errorf("nodes: %v, %v", attr(a1, tracing.AttrNode), attr(a2, tracing.AttrNode))
	}
	if a1.Status.Code != codes.Error || attr(a1, "process.exit.code").AsInt64() != 2 || attr(a1, tracing.AttrClass).AsString() != "transient" ||
		attr(a1, tracing.AttrCommandHash).AsString() != "h1" || attr(a1, tracing.AttrVerdict).AsString() != "allow" {
		t.Errorf("attempt 1: %+v %v", a1.Status, a1.Attributes)
	}
	if !a1.StartTime.Equal(t0.Add(5*time.Second)) || !a1.EndTime.Equal(t0.Add(7*time.Second)) {
		t.Errorf("attempt 1 ran %s–%s", a1.StartTime, a1.EndTime)
	}
	if a2.Status.Code == codes.Error || attr(a2, tracing.AttrVerdict).AsString() != "confirm" || attr(a2, tracing.AttrRisk).AsString() != "high" {
		t.Errorf("attempt 2: %+v %v", a2.Status, a2.Attributes)
	}
	chat := m["chat qwen2.5-coder:7b"]
	if len(chat) != 1 || chat[0].Parent.SpanID() != tracing.RunSpanID(run) || chat[0].SpanKind != trace.SpanKindClient ||
		attr(chat[0], "gen_ai.operation.name").AsString() != "chat" || attr(chat[0], "gen_ai.request.model").AsString() != "qwen2.5-coder:7b" ||
		attr(chat[0], "gen_ai.response.model").AsString() != "qwen2.5-coder:7b-q4" || attr(chat[0], "gen_ai.usage.input_tokens").AsInt64() != 1200 ||
		!chat[0].StartTime.Equal(t0.Add(500*time.Millisecond)) || attr(chat[0], tracing.AttrPlanner).AsString() != "v1+llm/1+abc" {
		t.Errorf("model call = %+v", chat)
	}
	read, tool := m["step read"], m["execute_tool fs/read_text_file"]
	if len(read) != 1 || len(tool) != 1 || tool[0].Parent.SpanID() != read[0].SpanContext.SpanID() ||
		attr(tool[0], "gen_ai.tool.name").AsString() != "fs/read_text_file" || attr(tool[0], "gen_ai.operation.name").AsString() != "execute_tool" {
		t.Errorf("tool call = %+v under %+v", tool, read)
	}
}

// TestResourceNamesTheService: spans carry the resource service.name
// (agentd, unless OTEL_SERVICE_NAME says otherwise) with the SDK's
// attributes.
func TestResourceNamesTheService(t *testing.T) {
	res, err := tracing.Resource(context.Background(), "agentd")
	if err != nil {
		t.Fatalf("Resource: %v", err)
	}
	tr, exp := newTracer(t, t0.Add(time.Minute))
	for _, ev := range twoExecutors("").evs {
		tr.Observe(ev, true)
	}
	for _, s := range exp.GetSpans() {
		if v, ok := s.Resource.Set().Value("service.name"); !ok || v.AsString() != "agentd" {
			t.Fatalf("span %s has service.name %v (resource %v)", s.Name, v, s.Resource)
		}
		if _, ok := s.Resource.Set().Value("telemetry.sdk.language"); !ok {
			t.Fatalf("span %s's resource lacks the SDK's attributes: %v", s.Name, s.Resource)
		}
	}
	if v, _ := res.Set().Value("service.name"); v.AsString() != "agentd" {
		t.Fatalf("Resource gives service.name %v", v)
	}
}

// TestSubmittersTraceParent: the run joins the trace of the goal's
// traceparent, its root span a child of the submitter's span.
func TestSubmittersTraceParent(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tr, exp := newTracer(t, t0.Add(time.Minute))
	for _, ev := range twoExecutors(parent).evs {
		tr.Observe(ev, true)
	}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("%s in trace %s", s.Name, s.SpanContext.TraceID())
		}
		if s.Name == "run" && (s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote()) {
			t.Errorf("root's parent = %+v", s.Parent)
		}
	}
}

// TestOnlyTheLeaderExports: a node that folds without leading exports
// nothing; when it takes the lead it exports the spans that ended within
// Backfill — the same ids the old leader exported — and not older ones.
func TestOnlyTheLeaderExports(t *testing.T) {
	evs := twoExecutors("").evs
	// The old leader exported everything up to the second attempt.
	old, oldExp := newTracer(t, t0.Add(time.Minute))
	cut := 9 // after the second attempt's task.finished
	for _, ev := range evs[:cut] {
		old.Observe(ev, true)
	}
	// A follower folds the same events without leading: nothing goes out.
	now := t0.Add(10*time.Minute + 8*time.Second) // attempt 1 (ended at 7s) is older than Backfill
	follower, exp := newTracer(t, now)
	for _, ev := range evs[:cut] {
		follower.Observe(ev, false)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("a follower exported %d spans", n)
	}
	// It takes the lead and folds the rest.
	for _, ev := range evs[cut:] {
		follower.Observe(ev, true)
	}
	got := byName(exp.GetSpans())
	if len(got["step build"]) != 1 || got["step build"][0].SpanContext.SpanID() != tracing.AttemptSpanID(run, "build", 2) {
		t.Fatalf("the new leader exported the build attempts %+v, want attempt 2 alone (attempt 1 ended before Backfill)", got["step build"])
	}
	oldSpans := byName(oldExp.GetSpans())
	if !oldSpans["step build"][1].SpanContext.Equal(got["step build"][0].SpanContext) {
		t.Fatalf("the two leaders' spans of attempt 2 differ: %v vs %v", oldSpans["step build"][1].SpanContext, got["step build"][0].SpanContext)
	}
	if len(got["run"]) != 1 || len(got["step read"]) != 1 {
		t.Fatalf("the new leader's spans: %v", exp.GetSpans())
	}
}

// TestIDsAreDerived: the same run, step and attempt give the same ids on
// every call; different ones differ.
func TestIDsAreDerived(t *testing.T) {
	if tracing.TraceID(run) != tracing.TraceID(run) || tracing.AttemptSpanID(run, "a", 1) != tracing.AttemptSpanID(run, "a", 1) {
		t.Fatal("ids are not stable")
	}
	if tracing.AttemptSpanID(run, "a", 1) == tracing.AttemptSpanID(run, "a", 2) || tracing.AttemptSpanID(run, "a", 1) == tracing.AttemptSpanID(run, "b", 1) ||
		tracing.TraceID(run) == tracing.TraceID(run+"x") || !tracing.TraceID(run).IsValid() || !tracing.RunSpanID(run).IsValid() {
		t.Fatal("ids collide or are invalid")
	}
}

// TestEnabled: export is on only with an OTLP endpoint, and off when the
// SDK or the traces exporter is turned off.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "agentd-a"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v", c.env, got)
		}
	}
	tr, err := tracing.FromEnv(context.Background(), func(string) string { return "" }, "agentd", nil)
	if err != nil || tr != nil {
		t.Fatalf("FromEnv with nothing set = %v, %v", tr, err)
	}
	tr.Observe(event.Event{}, true) // a nil tracer is a no-op
	if err := tr.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBatchedTracerFoldsOffTheCaller: a tracer that batches (what agentd
// runs) folds on a goroutine of its own, in the order events were
// observed: after ForceFlush it has exported the same spans a synchronous
// one does, and Stop ends its goroutine (goleak, main_test.go).
func TestBatchedTracerFoldsOffTheCaller(t *testing.T) {
	sync, want := newTracer(t, t0.Add(time.Minute))
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(exp, tracing.Options{Now: func() time.Time { return t0.Add(time.Minute) }})
	for _, ev := range twoExecutors("").evs {
		sync.Observe(ev, true)
		tr.Observe(ev, true)
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := byName(exp.GetSpans())
	if len(exp.GetSpans()) != len(want.GetSpans()) {
		t.Fatalf("%d spans, want %d", len(exp.GetSpans()), len(want.GetSpans()))
	}
	for name, ws := range byName(want.GetSpans()) {
		gs := got[name]
		if len(gs) != len(ws) {
			t.Fatalf("%s: %d spans, want %d", name, len(gs), len(ws))
		}
		for i := range ws {
			if gs[i].SpanContext.SpanID() != ws[i].SpanContext.SpanID() || gs[i].Parent.SpanID() != ws[i].Parent.SpanID() ||
				!gs[i].StartTime.Equal(ws[i].StartTime) || !gs[i].EndTime.Equal(ws[i].EndTime) {
				t.Errorf("%s[%d] = %+v, want %+v", name, i, gs[i], ws[i])
			}
		}
	}
	if err := tr.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.Observe(twoExecutors("").evs[0], true) // after Stop: ignored, no panic
}
