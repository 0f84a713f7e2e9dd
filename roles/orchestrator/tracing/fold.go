package tracing

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentic-dev/agentic/bus/event"
)

// Attribute keys of agentic's own (the GenAI and process ones are
// semconv's).
const (
	AttrRun         = attribute.Key("agentic.run.id")
	AttrGoal        = attribute.Key("agentic.run.goal")
	AttrRunStatus   = attribute.Key("agentic.run.status")
	AttrCode        = attribute.Key("agentic.code")
	AttrStep        = attribute.Key("agentic.step.id")
	AttrAttempt     = attribute.Key("agentic.step.attempt")
	AttrKind        = attribute.Key("agentic.step.kind")
	AttrStepStatus  = attribute.Key("agentic.step.status")
	AttrNode        = attribute.Key("agentic.node")
	AttrCommandHash = attribute.Key("agentic.command.hash")
	AttrVerdict     = attribute.Key("agentic.policy.verdict")
	AttrRisk        = attribute.Key("agentic.policy.level")
	AttrClass       = attribute.Key("agentic.failure.class")
	AttrPlanner     = attribute.Key("agentic.planner.version")
	AttrRevision    = attribute.Key("agentic.plan.revision")
)

// runInfo is what the tracer keeps of a live run.
type runInfo struct {
	traceID  trace.TraceID
	parent   trace.SpanID // the submitter's span, if any
	start    time.Time
	goal     string
	attempts map[attemptKey]*attemptInfo
	verdicts map[string]event.Verdict // step → its gate's verdict
}

type attemptKey struct {
	step    string
	attempt int
}

type attemptInfo struct {
	node     string
	kind     event.StepKind
	tool     string
	assigned time.Time
	started  time.Time
}

// run returns the context of run id, made if new (the goal unknown: the
// tracer came in after it).
func (t *Tracer) run(id string) *runInfo {
	r := t.runs[id]
	if r != nil {
		return r
	}
	if len(t.runs) >= MaxRuns {
		for k := range t.runs { // forget any one
			delete(t.runs, k)
			break
		}
	}
	r = &runInfo{traceID: TraceID(id), attempts: map[attemptKey]*attemptInfo{}, verdicts: map[string]event.Verdict{}}
	t.runs[id] = r
	return r
}

// fold returns the spans ev completes.
func (t *Tracer) fold(ev event.Event) []span {
	if ev.Run == "" {
		return nil
	}
	switch ev.Type {
	case event.GoalSubmitted:
		var d goalData
		if t.decode(ev, &d) {
			r := t.run(ev.Run)
			r.start, r.goal = ev.Time, d.Goal
			if d.TraceParent != "" {
				if tid, sid, _, err := event.ParseTraceParent(d.TraceParent); err == nil {
					r.traceID, r.parent = tid, sid
				}
			}
		}
	case event.PlanProposed:
		var d proposedData
		if t.decode(ev, &d) && d.Planner != nil {
			r := t.run(ev.Run)
			return []span{r.modelSpan(ev, PlanSpanID(ev.Run, d.Revision), RunSpanID(ev.Run), d.Planner,
				AttrRevision.Int(d.Revision))}
		}
	case event.GateOpened:
		var d event.GateOpenedData
		if t.decode(ev, &d) && d.Step != "" && d.Verdict != nil {
			t.run(ev.Run).verdicts[d.Step] = *d.Verdict
		}
	case event.TaskAssigned:
		var d assignedData // the fields a span needs, not the whole step
		if t.decode(ev, &d) {
			r := t.run(ev.Run)
			r.attempts[attemptKey{d.Step.ID, d.Attempt}] = &attemptInfo{node: d.Node, kind: d.Step.Kind, tool: d.Step.Tool, assigned: ev.Time}
		}
	case event.TaskStarted:
		var d startedData
		if t.decode(ev, &d) {
			if a := t.run(ev.Run).attempts[attemptKey{d.Step, d.Attempt}]; a != nil {
				a.started = ev.Time
			}
		}
	case event.TaskFinished:
		var d event.TaskFinishedData
		if t.decode(ev, &d) {
			return t.run(ev.Run).attemptSpans(ev, &d)
		}
	case event.CritiqueRecorded:
		var d critiqueData
		if t.decode(ev, &d) && d.Planner != nil {
			r := t.run(ev.Run)
			return []span{r.modelSpan(ev, CritiqueSpanID(ev.Run, d.Step, d.Attempt), RunSpanID(ev.Run), d.Planner,
				AttrStep.String(d.Step), AttrAttempt.Int(d.Attempt))}
		}
	case event.RunFinished:
		var d event.RunFinishedData
		if t.decode(ev, &d) {
			r := t.run(ev.Run)
			delete(t.runs, ev.Run)
			return []span{r.rootSpan(ev, &d)}
		}
	}
	return nil
}

func (t *Tracer) decode(ev event.Event, v any) bool {
	if err := ev.Decode(v); err != nil {
		t.log.Warn("event skipped", "seq", ev.Seq, "type", ev.Type, "err", err)
		return false
	}
	return true
}

// assignedData is the part of event.TaskAssignedData a span needs:
// decoding the whole step (environment, checks, facts) on the fold's
// goroutine would cost the leader for nothing.
type assignedData struct {
	Step struct {
		ID   string         `json:"id"`
		Kind event.StepKind `json:"kind"`
		Tool string         `json:"tool"`
	} `json:"step"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
}

// goalData is the part of event.GoalSubmittedData a span needs (not the
// plan file).
type goalData struct {
	Goal        string `json:"goal"`
	TraceParent string `json:"traceparent"`
}

// proposedData is the part of event.PlanProposedData a span needs (not
// the plan).
type proposedData struct {
	Revision int                `json:"revision"`
	Planner  *event.PlannerInfo `json:"planner_info"`
}

// critiqueData is the part of event.CritiqueRecordedData a span needs.
type critiqueData struct {
	Step    string             `json:"step"`
	Attempt int                `json:"attempt"`
	Planner *event.PlannerInfo `json:"planner_info"`
}

// startedData is the part of event.TaskStartedData a span needs.
type startedData struct {
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
}

// rootSpan is the run's span: from its goal to its end.
func (r *runInfo) rootSpan(ev event.Event, d *event.RunFinishedData) span {
	start := r.start
	if start.IsZero() {
		start = ev.Time
	}
	s := span{
		name: "run", kind: trace.SpanKindInternal, traceID: r.traceID, parent: r.parent, id: RunSpanID(ev.Run),
		start: start, end: ev.Time,
		attrs: []attribute.KeyValue{AttrRun.String(ev.Run), AttrRunStatus.String(string(d.Status))},
	}
	if r.goal != "" {
		s.attrs = append(s.attrs, AttrGoal.String(r.goal))
	}
	if d.Code != "" {
		s.attrs = append(s.attrs, AttrCode.String(d.Code))
	}
	if d.Status != event.RunSucceeded {
		s.failed, s.desc = true, d.Reason
	}
	return s
}

// attemptSpans are an attempt's span and, for a tool step, its tool
// call's.
func (r *runInfo) attemptSpans(ev event.Event, d *event.TaskFinishedData) []span {
	key := attemptKey{d.Step, d.Attempt}
	a := r.attempts[key]
	delete(r.attempts, key)
	if a == nil {
		a = &attemptInfo{node: d.Node}
	}
	start, end := d.Started, ev.Time
	switch {
	case !start.IsZero() && d.Duration > 0:
		end = start.Add(d.Duration.Std())
	case start.IsZero() && !a.started.IsZero():
		start = a.started
	case start.IsZero() && !a.assigned.IsZero():
		start = a.assigned
	case start.IsZero():
		start = ev.Time
	}
	verdict := "allow"
	attrs := []attribute.KeyValue{
		AttrRun.String(ev.Run), AttrStep.String(d.Step), AttrAttempt.Int(d.Attempt),
		AttrNode.String(d.Node), AttrStepStatus.String(string(d.Status)), semconv.ProcessExitCode(d.ExitCode),
	}
	if v, ok := r.verdicts[d.Step]; ok {
		verdict = v.Action
		attrs = append(attrs, AttrRisk.String(v.Level))
	}
	attrs = append(attrs, AttrVerdict.String(verdict))
	if a.kind != "" {
		attrs = append(attrs, AttrKind.String(string(a.kind)))
	}
	if d.CommandHash != "" {
		attrs = append(attrs, AttrCommandHash.String(d.CommandHash))
	}
	failed := d.Status == event.TaskFailed
	if failed && d.Class != "" {
		attrs = append(attrs, AttrClass.String(string(d.Class)), semconv.ErrorTypeKey.String(string(d.Class)))
	}
	step := span{
		name: "step " + d.Step, kind: trace.SpanKindInternal, traceID: r.traceID, parent: RunSpanID(ev.Run),
		id: AttemptSpanID(ev.Run, d.Step, d.Attempt), start: start, end: end, attrs: attrs, failed: failed, desc: d.Error,
	}
	if a.kind != event.KindTool {
		return []span{step}
	}
	tool := span{
		name: "execute_tool " + a.tool, kind: trace.SpanKindClient, traceID: r.traceID, parent: step.id,
		id: ToolSpanID(ev.Run, d.Step, d.Attempt), start: start, end: end, failed: failed, desc: d.Error,
		attrs: []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(a.tool),
			AttrRun.String(ev.Run), AttrStep.String(d.Step), AttrAttempt.Int(d.Attempt)},
	}
	return []span{step, tool}
}

// modelSpan is a model call's span (GenAI semantic conventions): it
// ends when the event that records it was made and lasted the calls'
// latency.
func (r *runInfo) modelSpan(ev event.Event, id, parent trace.SpanID, p *event.PlannerInfo, extra ...attribute.KeyValue) span {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel(p.Model),
		semconv.GenAIUsageInputTokens(p.PromptTokens), semconv.GenAIUsageOutputTokens(p.CompletionTokens),
		AttrRun.String(ev.Run), AttrPlanner.String(p.Build + "+" + p.Planner + "+" + p.Template),
	}
	if p.ServedModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(p.ServedModel))
	}
	if p.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*p.Temperature))
	}
	if p.Seed != nil {
		attrs = append(attrs, semconv.GenAIRequestSeed(int(*p.Seed)))
	}
	if p.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(p.MaxTokens))
	}
	attrs = append(attrs, extra...)
	return span{
		name: fmt.Sprintf("chat %s", p.Model), kind: trace.SpanKindClient, traceID: r.traceID, parent: parent, id: id,
		start: ev.Time.Add(-p.Latency.Std()), end: ev.Time, attrs: attrs,
	}
}
