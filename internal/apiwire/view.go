package apiwire

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Run is the public shape of a run (agentctl run show -o json, the
// HTTP API). Documented in docs/cli.md; fields are only ever added.
type Run struct {
	ID     string          `json:"id"`
	Goal   string          `json:"goal"`
	Status event.RunStatus `json:"status"`
	// Reason says why the run failed or was cancelled; while it runs, why
	// a ready step waits, if one does (orchestrator.Run.Reason).
	Reason     string     `json:"reason,omitempty"`
	Revision   int        `json:"revision"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Steps      []Step     `json:"steps"`
	// Code is the stable reason of a failure or cancellation (orchestrator.Codes);
	// Reason is for people.
	Code string `json:"code,omitempty"`
	// Ratings are operators' newest ratings of the run (run.rated),
	// oldest first; RatingsMore says older ones were left out.
	Ratings     []RunRating `json:"ratings,omitempty"`
	RatingsMore bool        `json:"ratings_more,omitempty"`
}

// RunRating is one operator's rating of a run (run.rated), as the run
// index keeps it.
type RunRating struct {
	Rating event.Rating `json:"rating"`
	Reason string       `json:"reason,omitempty"`
	// Operator is the signer of the rating.
	Operator string    `json:"operator"`
	At       time.Time `json:"at"`
	// Seq is the rating's ledger position.
	Seq uint64 `json:"seq"`
}

// Step is the public shape of a step within a Run.
type Step struct {
	ID         string         `json:"id"`
	Title      string         `json:"title,omitempty"`
	Subgoal    string         `json:"subgoal"`
	Kind       event.StepKind `json:"kind"`
	Status     string         `json:"status"`
	Attempt    int            `json:"attempt"`
	Node       string         `json:"node"`
	ExitCode   *int           `json:"exit_code"`
	DependsOn  []string       `json:"depends_on,omitempty"`
	Error      string         `json:"error,omitempty"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	// Code is the stable reason of the last failure or of the
	// cancellation (orchestrator.Codes); Error is for people.
	Code string `json:"code,omitempty"`
	// Reassigned counts the attempts given up for another (their node
	// failed, left or drained, or they did not start in time).
	Reassigned int `json:"reassigned,omitempty"`
	// Wait says why a pending step cannot be assigned until the
	// executors change: "no live executor offers docker".
	Wait string `json:"wait,omitempty"`
	// Approvers are the operators whose approval (at the step's gate, or
	// its run's plan gate) lets it run, while that approval stands.
	Approvers []string `json:"approvers,omitempty"`
	// Edits are the commands operators replaced at the step's gate,
	// oldest first; the step runs the newest.
	Edits []Edit `json:"edits,omitempty"`
	// Evidence is what the step's outcome says of each hypothesis it
	// tests (event.Step.Tests), once it is final: "none" unless it
	// succeeded or failed.
	Evidence []StepEvidence `json:"evidence,omitempty"`
	// Critique is a critique step's latest verdict and judgement.
	Critique *Verdict `json:"critique,omitempty"`
}

// RunSummary is a run without its steps: one row of a run listing
// (agentctl run list -o json, GET /api/runs). Documented in docs/cli.md;
// fields are only ever added.
type RunSummary struct {
	ID       string          `json:"id"`
	Goal     string          `json:"goal"`
	Status   event.RunStatus `json:"status"`
	Reason   string          `json:"reason,omitempty"`
	Revision int             `json:"revision"`
	// Steps is the number of steps of the current plan revision.
	Steps int `json:"steps"`
	// StepCounts counts the steps per status (as Step shows them);
	// statuses with no step are left out.
	StepCounts map[string]int `json:"step_counts"`
	// CreatedAt is the stream time of the run's goal.submitted: runs are
	// listed by it (newest first), ties broken by run id.
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Code is the stable reason of a failure or cancellation (orchestrator.Codes);
	// Reason is for people.
	Code string `json:"code,omitempty"`
	// Ratings are operators' newest ratings of the run (run.rated),
	// oldest first, in runs.get's answer only (a listing leaves them
	// out); RatingsMore says older ones were left out.
	Ratings     []RunRating `json:"ratings,omitempty"`
	RatingsMore bool        `json:"ratings_more,omitempty"`
}

// Edit is one operator's edit of a gated step: the command it replaced.
type Edit struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// StepEvidence is what one step's outcome says of one hypothesis it tests
// (event.Step.Tests): supports, refutes or none.
type StepEvidence struct {
	Hypothesis string         `json:"hypothesis"`
	Evidence   event.Evidence `json:"evidence"`
}

// Verdict is a critique attempt's recorded verdict, as the orchestrator's
// state and the views keep it: pass or fail with the model's judgement, or
// error with why there is none.
type Verdict struct {
	Verdict   event.CritiqueVerdict `json:"verdict"`
	Judgement string                `json:"judgement,omitempty"`
	Error     string                `json:"error,omitempty"`
	Code      string                `json:"code,omitempty"`
}
