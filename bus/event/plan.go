package event

// Plan is a plan as it travels in plan.proposed: a flat list of steps in a
// DAG, normalized by the planner (roles/planner/plan), which owns the
// authoring formats (YAML, JSON, seed) and converts them into this type.
// The wire form changes only with the protocol: a field is added, never
// renamed, retyped or given another meaning.
//
// A planner sends a plan whose step ids are unique and valid (ValidStepID),
// whose dependencies name earlier steps (the steps are in a topological
// order) and whose defaults are filled (Kind, OnFailure). Receivers check
// it again: the orchestrator fails a run whose plan breaks these rules.
type Plan struct {
	// Goal is the human description of what the plan achieves.
	Goal string `json:"goal,omitempty"`
	// Subgoals lists the subgoals in declaration order. They are labels:
	// dependencies between subgoals are already expanded into the steps'
	// DependsOn.
	Subgoals []Subgoal `json:"subgoals,omitempty"`
	// Steps in a topological order: every step comes after the steps it
	// depends on.
	Steps []Step `json:"steps"`
}

// Subgoal is a named group of steps.
type Subgoal struct {
	// ID shares the step ids' namespace and grammar (ValidStepID).
	ID string `json:"id"`
	// Title describes it for people.
	Title string `json:"title,omitempty"`
}

// Step is one unit of work of a plan, and what task.assigned gives an
// executor.
type Step struct {
	// ID is unique in the plan and valid by ValidStepID: it travels in
	// subjects (the step's output goes to agentic.log.<run>.<step>).
	ID string `json:"id"`
	// Title describes the step for people.
	Title string `json:"title,omitempty"`
	// Subgoal is the id of the subgoal the step belongs to, if any.
	Subgoal string `json:"subgoal,omitempty"`
	// Kind is how an executor runs it.
	Kind StepKind `json:"kind"`
	// Run is the shell script of a shell step (run by /bin/sh -c).
	Run string `json:"run,omitempty"`
	// DependsOn lists the ids of the steps that must be done first.
	DependsOn []string `json:"depends_on,omitempty"`
	// Timeout bounds one attempt; zero means the executor's default.
	Timeout Duration `json:"timeout,omitzero"`
	// Retries is how many more attempts a failure may get (so Retries 2
	// allows 3 attempts); which failures depends on their class and
	// OnFailure.
	Retries int `json:"retries,omitempty"`
	// Backoff is the delay before the first retry, doubled for each next
	// one (capped by the orchestrator); zero means its default.
	Backoff Duration `json:"backoff,omitzero"`
	// Idempotent says the step may safely run again after an attempt was
	// interrupted part-way (TaskFinishedData.Interrupted).
	Idempotent bool `json:"idempotent,omitempty"`
	// Creates is a guard: when this path (relative to Cwd) exists, the step
	// is skipped without running.
	Creates string `json:"creates,omitempty"`
	// Check is a guard: when this shell command exits 0, the step is
	// skipped.
	Check string `json:"check,omitempty"`
	// OnFailure routes a logic failure (ClassLogic).
	OnFailure OnFailure `json:"on_failure,omitempty"`
	// Env is added to the command's environment.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the working directory; relative to the executor's default
	// when relative, the default when empty.
	Cwd string `json:"cwd,omitempty"`
	// Capabilities the executor must offer (executor.online), all of
	// them: a step that needs docker runs only where docker is. Protocol
	// version 2; absent means any executor.
	Capabilities []string `json:"capabilities,omitempty"`
	// Path is the file a file.write step writes, relative to Cwd when
	// relative. Protocol version 5.
	Path string `json:"path,omitempty"`
	// Content is what a file.write step writes.
	Content string `json:"content,omitempty"`
	// Mode is the permission bits of a file a file.write step creates,
	// in octal ("0644" when empty); an existing file keeps its own.
	Mode string `json:"mode,omitempty"`
	// Patch is a file.patch step's unified diff.
	Patch string `json:"patch,omitempty"`
	// Compensate is a shell command that undoes a succeeded shell step:
	// run, as a recorded step, when the run fails or is cancelled after
	// it. File edits are compensated by their before-images. Protocol
	// version 5.
	Compensate string `json:"compensate,omitempty"`
	// RunAs is the user the executor runs the step as; empty means the
	// executor's default (never root when agentd runs as root). Protocol
	// version 5.
	RunAs string `json:"run_as,omitempty"`
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

// StepKind says how an executor runs a step. Kinds are append-only; an
// executor fails a step of a kind it does not know (ClassLogic).
type StepKind string

// Step kinds.
const (
	// KindShell runs Run with /bin/sh -c.
	KindShell StepKind = "shell"
	// KindNoop runs nothing and succeeds: a join point of the DAG.
	KindNoop StepKind = "noop"
	// KindFileWrite writes Content to Path (protocol version 5): the
	// executor keeps the file's before-image, so that the edit can be
	// compensated, and writing the same content again is a no-op.
	KindFileWrite StepKind = "file.write"
	// KindFilePatch applies the unified diff Patch to the files it names,
	// relative to Cwd (protocol version 5), keeping their before-images.
	KindFilePatch StepKind = "file.patch"
)

// OnFailure says what a logic failure (ClassLogic) of a step does to its
// run. Values are append-only; an unknown one acts as OnFailureAbort.
type OnFailure string

// Failure routes.
const (
	// OnFailureAbort fails the run (the default).
	OnFailureAbort OnFailure = "abort"
	// OnFailureRetry retries logic failures too, up to Retries.
	OnFailureRetry OnFailure = "retry"
	// OnFailureContinue marks the step failed and lets its dependents run.
	OnFailureContinue OnFailure = "continue"
	// OnFailureReplan asks the planner for a revised plan (protocol
	// version 5): the run waits for the next revision, which keeps the
	// steps already done, within the run's replans budget. A plan-file
	// goal cannot be replanned: its run fails.
	OnFailureReplan OnFailure = "replan"
)
