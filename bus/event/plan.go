package event

import "encoding/json"

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
	// Hypotheses are what the plan sets out to test (a debugging
	// playbook): steps name the ones they test (Step.Tests), and their
	// results are the evidence. Protocol version 6.
	Hypotheses []Hypothesis `json:"hypotheses,omitempty"`
	// Open says the plan is not complete: it is planned a step at a time
	// (the planner's ReAct mode). When every step of an open plan is
	// final, the leader asks the planner for the next revision
	// (plan.replan_requested with reason "next") instead of finishing
	// the run; a revision that is not open ends it. Protocol version 6.
	Open bool `json:"open,omitempty"`
	// Git, when set, makes the run a git run (git.go): its steps work in
	// a worktree of the repository, on a branch of their own, and its end
	// pushes the branch and records a pull request. Protocol version 8.
	Git *GitSpec `json:"git,omitempty"`
	// Family names the plan family the run belongs to: the runs of the
	// same job, which share the facts of scope "family:<name>"
	// (ValidFamily). A model's plan inherits the submitted goal's.
	// Protocol version 8.
	Family string `json:"family,omitempty"`
}

// Hypothesis is one thing a plan tests. Protocol version 6.
type Hypothesis struct {
	// ID shares the step ids' grammar (ValidStepID) and is unique among
	// the plan's hypotheses.
	ID string `json:"id"`
	// Statement says what is supposed, for people ("the cache is stale").
	Statement string `json:"statement"`
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
	// Target is the step a critique step judges (it is among DependsOn),
	// and Criteria what its output must show to pass. Protocol version 6.
	Target   string `json:"target,omitempty"`
	Criteria string `json:"criteria,omitempty"`
	// Next routes the run by this step's outcome: a step named by a
	// branch runs only if that branch is taken (and depends on this step);
	// the targets of branches not taken end skipped (SkipBranchNotTaken),
	// and so does every step none of whose dependencies was reached. A
	// failure that a branch routes is handled, like on_failure continue.
	// Protocol version 6.
	Next []Branch `json:"next,omitempty"`
	// Tests names the hypotheses this step's result is evidence for.
	// Protocol version 6.
	Tests []HypothesisTest `json:"tests,omitempty"`
	// Tool names the tool a tool step calls, "plugin/tool", and Args its
	// arguments (a JSON object). Protocol version 8.
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Worktree marks a step of a git run: it runs in the run's worktree
	// (Cwd relative to it), on the executor that holds it, and an edit
	// that succeeds there is committed. Protocol version 8.
	Worktree bool `json:"worktree,omitempty"`
	// Git is the plan's git block, carried by the steps that act on the
	// repository (git.worktree, git.finish, git.discard). Protocol
	// version 8.
	Git *GitSpec `json:"git,omitempty"`
	// Facts are the facts the step writes when it ends, recorded by the
	// executor that ran it (memory.recorded). Protocol version 8.
	Facts []FactSpec `json:"facts,omitempty"`
	// Releases are "SCOPE/KEY" references of quarantined facts this step
	// validates: when it succeeds, the memory fold releases them —
	// provided the run's plan is an operator's plan file, or the step's
	// assignment carries an operator's approval (a gate); never for a
	// step a model chose alone. Protocol version 8.
	Releases []string `json:"releases,omitempty"`
	// Outputs are globs, relative to the step's working directory, of
	// the files the executor that ran the step stores as artifacts when
	// it succeeds (artifact.stored); none may leave the directory.
	// Protocol version 8.
	Outputs []string `json:"outputs,omitempty"`
	// Inputs are artifacts written into the step's working directory,
	// verified, before it runs; the leader resolves each to a hash at
	// assignment (TaskAssignedData.Inputs). Protocol version 8.
	Inputs []ArtifactInput `json:"inputs,omitempty"`
	// Questions are what a research step sets out to answer, and Sources
	// the URLs it fetches (each judged by the policy's scopes.network).
	// Protocol version 8.
	Questions []ResearchQuestion `json:"questions,omitempty"`
	Sources   []string           `json:"sources,omitempty"`
}

// Branch is one edge of Step.Next. Protocol version 6.
type Branch struct {
	// On is the outcome that takes the branch.
	On BranchOn `json:"on"`
	// To is the id of a later step of the plan.
	To string `json:"to"`
}

// BranchOn is the outcome a branch is taken on. Values are append-only.
type BranchOn string

// Branch outcomes.
const (
	// BranchOnSuccess: the step succeeded (or was skipped by its guard).
	BranchOnSuccess BranchOn = "success"
	// BranchOnFailure: the step failed for good (its retries spent).
	BranchOnFailure BranchOn = "failure"
)

// HypothesisTest says what a step's outcome means for one hypothesis.
// Protocol version 6.
type HypothesisTest struct {
	// Hypothesis is the id of one of the plan's Hypotheses.
	Hypothesis string `json:"hypothesis"`
	// Success and Failure are the evidence the step's success and its
	// failure give; absent means EvidenceSupports on success and
	// EvidenceRefutes on failure.
	Success Evidence `json:"success,omitempty"`
	Failure Evidence `json:"failure,omitempty"`
}

// Evidence is what a result says of a hypothesis. Values are append-only.
type Evidence string

// Evidence values.
const (
	EvidenceSupports Evidence = "supports"
	EvidenceRefutes  Evidence = "refutes"
	// EvidenceNone: the outcome says nothing of the hypothesis.
	EvidenceNone Evidence = "none"
)

// SkipBranchNotTaken is the reason shown for a step skipped because the
// branch that leads to it was not taken (or none of its dependencies was
// reached). Protocol version 6.
const SkipBranchNotTaken = "branch_not_taken"

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
	// KindCritique is judged by a model, not run by an executor
	// (protocol version 6): a planner asks whether the output of Target
	// meets Criteria, and the verdict passes or fails the step
	// (critique.requested, critique.recorded).
	KindCritique StepKind = "critique"
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
