package event

// CritiqueRequestedData asks the planners to judge a critique step
// (KindCritique): whether Output, the output of the step Target, meets
// Criteria. The leader emits it when the step is ready, in place of a
// task.assigned. A decision. Protocol version 6.
type CritiqueRequestedData struct {
	Decision
	// Step and Attempt name the critique attempt; a retry is a new request.
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Target is the step judged, Criteria what it must show.
	Target   string `json:"target"`
	Criteria string `json:"criteria"`
	// Goal is the run's goal, for the judge's context.
	Goal string `json:"goal,omitempty"`
	// TargetStatus, ExitCode and Output are how the target ended: its
	// final status, its last attempt's exit code and redacted output tail.
	TargetStatus StepStatus `json:"target_status"`
	ExitCode     int        `json:"exit_code,omitempty"`
	Output       string     `json:"output,omitempty"`
	// Memory are the criteria's ${memory:SCOPE/KEY} references as the
	// leader resolved them into Criteria. Protocol version 8.
	Memory []MemoryValue `json:"memory,omitempty"`
	// Kind is the step's kind when it is not a critique: KindSynthesise
	// asks for notes on the sources its target, a research step,
	// fetched (Sources), answering its Questions. Protocol version 8.
	Kind      StepKind           `json:"kind,omitempty"`
	Questions []ResearchQuestion `json:"questions,omitempty"`
	Sources   []ResearchSource   `json:"sources,omitempty"`
}

// CritiqueVerdict is a critique's judgement. Values are append-only.
type CritiqueVerdict string

// Verdicts.
const (
	// VerdictPass: the target met the criteria; the critique step succeeds.
	VerdictPass CritiqueVerdict = "pass"
	// VerdictFail: it did not; the critique step fails with class logic
	// (its on_failure applies: abort, continue, retry, replan).
	VerdictFail CritiqueVerdict = "fail"
	// VerdictError: no judgement could be made (the model failed, timed
	// out, answered nonsense twice, or no planner could judge): the step
	// fails with class transient, retried within its retries.
	VerdictError CritiqueVerdict = "error"
)

// CritiqueRecordedData is a planner's judgement of a critique attempt:
// the orchestrator folds it as that attempt's result. Protocol version 6.
type CritiqueRecordedData struct {
	Step    string          `json:"step"`
	Attempt int             `json:"attempt"`
	Verdict CritiqueVerdict `json:"verdict"`
	// Judgement is the model's reasoning, for people (redacted).
	Judgement string `json:"judgement,omitempty"`
	// Error says why there is no judgement (VerdictError); Code is its
	// stable reason when there is one (NoPlanner).
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	// Planner is the provenance of the model call(s), as for plans.
	Planner *PlannerInfo `json:"planner_info,omitempty"`
}
