package plan

import "time"

// Step kinds understood by executors.
const (
	KindShell = "shell"
	KindNoop  = "noop"
)

// Failure routes for OnFailure.
const (
	OnFailureAbort    = "abort"    // fail the run (the default)
	OnFailureRetry    = "retry"    // retry logic failures too, up to Retries
	OnFailureContinue = "continue" // mark the step failed, let dependents run
)

// Plan is a validated, normalized plan: a flat list of steps in a DAG.
// Subgoals are kept as labels on steps; subgoal-level dependencies are
// expanded into step dependencies by Normalize, so consumers of a Plan never
// need to know about subgoal nesting.
type Plan struct {
	// Goal is the human description of what the plan achieves.
	Goal string `json:"goal,omitempty"`
	// Subgoals lists subgoal ids in declaration order, with their titles.
	Subgoals []Subgoal `json:"subgoals,omitempty"`
	// Steps in a deterministic topological order (stable: declaration order
	// among independent steps).
	Steps []Step `json:"steps"`
}

// Subgoal is a named group of steps.
type Subgoal struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
}

// Step is one unit of work. Durations are carried as time.Duration
// (nanoseconds in JSON) after normalization.
type Step struct {
	ID         string            `json:"id"`
	Title      string            `json:"title,omitempty"`
	Subgoal    string            `json:"subgoal,omitempty"`
	Kind       string            `json:"kind"`
	Run        string            `json:"run,omitempty"`
	DependsOn  []string          `json:"depends_on,omitempty"`
	Timeout    time.Duration     `json:"timeout,omitempty"`
	Retries    int               `json:"retries,omitempty"`
	Backoff    time.Duration     `json:"backoff,omitempty"`
	Idempotent bool              `json:"idempotent,omitempty"`
	Creates    string            `json:"creates,omitempty"`
	Check      string            `json:"check,omitempty"`
	OnFailure  string            `json:"on_failure,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
}

// Step returns the step with the given id, or nil.
func (p *Plan) Step(id string) *Step {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i]
		}
	}
	return nil
}
