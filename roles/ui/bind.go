package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// boundSubject is the subject an answer from the page binds to: the ui
// node reads the open gate itself (its own read, not what the browser
// sent) and, for a step gate, computes the hash of the step and policy it
// holds (event.GateSubject). The browser's subject must be that one: a
// page that showed another version of the gate (the step was edited, the
// policy changed) or a forged form is refused, nothing emitted.
func (g *Gates) boundSubject(ctx context.Context, a answer) (string, error) {
	page, err := g.List(ctx, apiwire.GatesRequest{Run: a.Run, Step: a.Step})
	if err != nil {
		return "", fmt.Errorf("read the gate: %w", err)
	}
	for _, raw := range page.Items {
		var gate apiwire.Gate
		if err := json.Unmarshal(raw, &gate); err != nil {
			return "", fmt.Errorf("read the gate: %w", err)
		}
		if gate.Run != a.Run || gate.Step != a.Step {
			continue
		}
		subject := gate.Subject
		if gate.Spec != nil && gate.Step != "" {
			subject = event.ToolGateSubject(*gate.Spec, gate.Policy, gate.ToolHash)
		}
		if a.Subject != subject {
			return "", apiwire.WithHint(fmt.Errorf("%w: the answer names subject %s, but the gate open now is %s: the page showed another version of it",
				errStale, a.Subject, subject), "reload the gate and answer what it shows now")
		}
		return subject, nil
	}
	what := fmt.Sprintf("step %s of run %s has no open gate", a.Step, a.Run)
	if a.Step == "" {
		what = fmt.Sprintf("run %s has no open plan gate", a.Run)
	}
	return "", apiwire.WithHint(fmt.Errorf("%w: %s", apiwire.ErrNotFound, what), "it was answered, or expired: GET /api/gates lists the open ones")
}

// errStale marks an answer to a version of a gate that is no longer the
// open one (409).
var errStale = errors.New("stale answer")
