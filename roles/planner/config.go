package planner

import (
	"time"

	"github.com/agentic-dev/agentic/roles/research"
)

// Config configures the planner role. The zero Config is usable: New fills
// every zero field from DefaultConfig.
type Config struct {
	// Text plans free-text goals (the LLM planner). Nil: free-text goals
	// are rejected with a message that says to configure an LLM planner or
	// to submit a plan file instead.
	Text Source
	// Workers bounds the goals planned at the same time.
	Workers int
	// Timeout bounds planning one goal, and separately emitting the result.
	Timeout time.Duration
	// RetryBackoff is the delay before emitting again after Emit failed;
	// it doubles with each failure of the same run, up to MaxRetryBackoff.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps RetryBackoff's doubling.
	MaxRetryBackoff time.Duration
	// ClaimTimeout is how long a goal may wait for a planner that can plan
	// it to claim it; then a planner rejects the run with code no_planner.
	// Settings, when set, gives it instead (claimtimeout.go).
	ClaimTimeout time.Duration
	// Settings gives the claim timeout in force: the cluster setting.
	Settings ClaimSettings
	// Sources is the store of the sources research steps fetched, which
	// a synthesis reads (synthesis.go); nil: this planner cannot
	// synthesise, and records verdict error for a synthesise step.
	Sources research.Store
	// Templates gives the plan families' templates in force: a goal that
	// names a family and has neither a plan file nor text is planned from
	// its family's template (template.go). Nil: such a goal is rejected.
	Templates Templates
}

// DefaultConfig returns the defaults: no LLM source, 4 workers, a 2 minute
// timeout, emit retries from 1s up to 30s, a 30s claim timeout.
func DefaultConfig() Config {
	return Config{
		Workers:         4,
		Timeout:         2 * time.Minute,
		RetryBackoff:    time.Second,
		MaxRetryBackoff: 30 * time.Second,
		ClaimTimeout:    30 * time.Second,
	}
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Workers <= 0 {
		c.Workers = d.Workers
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = d.RetryBackoff
	}
	if c.ClaimTimeout <= 0 {
		c.ClaimTimeout = d.ClaimTimeout
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = max(d.MaxRetryBackoff, c.RetryBackoff)
	}
	return c
}
