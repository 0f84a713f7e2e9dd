package plan

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Limits on plan files and plans. They protect every node that folds a plan
// (a plan travels inside one event) and keep error output readable.
const (
	// MaxFileBytes caps a plan file.
	MaxFileBytes = 1 << 20
	// MaxSteps caps the steps of one plan.
	MaxSteps = 10000
	// MaxCommandBytes caps a step's run, check and creates strings.
	MaxCommandBytes = 64 << 10
	// MaxIDLen caps step and subgoal ids (event.ValidStepID).
	MaxIDLen = event.MaxStepIDLen
	// MaxRetries caps a step's retries.
	MaxRetries = 100
	// MaxTimeout caps a step's timeout: one attempt may run a day at most.
	MaxTimeout = 24 * time.Hour
	// MaxBackoff caps a step's backoff. It is the orchestrator's cap on
	// every retry delay (orchestrator.MaxBackoff): a longer backoff would
	// be cut to it without a word.
	MaxBackoff = 5 * time.Minute
	// MaxCapabilities caps the capabilities one step requires.
	MaxCapabilities = 32
	// MaxCapabilityLen caps the length of one capability name.
	MaxCapabilityLen = 64
	// MaxDependencies caps the dependency edges of a plan after subgoal
	// dependencies are expanded into step dependencies.
	MaxDependencies = 200000
	// MaxProblems caps the problems an *Error lists; the rest are counted.
	MaxProblems = 100

	// maxVisits bounds the YAML nodes a parse may visit, so that aliases
	// (a "billion laughs" document) cannot make a small file expensive.
	maxVisits = 4 << 20
	// maxSuggestions bounds the "did you mean" searches of one check.
	maxSuggestions = 32
	// maxCollected bounds the problems kept in memory before sorting.
	maxCollected = 10 * MaxProblems
)
