package core

import "github.com/agentic-dev/agentic/internal/apiwire"

// The public shapes of a run are the query API's wire types
// (internal/apiwire), declared there so that every layer may use them; the
// orchestrator builds them (runview.go).
type (
	// RunView is the public shape of a run (agentctl run show -o json,
	// the HTTP API). Documented in docs/cli.md; fields are only ever added.
	RunView = apiwire.Run
	// StepView is the public shape of a step within a RunView.
	StepView = apiwire.Step
	// RunSummary is a run without its steps: one row of a run listing.
	RunSummary = apiwire.RunSummary
	// Edit is one operator's edit of a gated step: the command it replaced.
	Edit = apiwire.Edit
	// StepEvidence is what one step's outcome says of one hypothesis it
	// tests: supports, refutes or none.
	StepEvidence = apiwire.StepEvidence
	// Verdict is a critique attempt's recorded verdict: pass or fail with
	// the model's judgement, or error with why there is none.
	Verdict = apiwire.Verdict
)
