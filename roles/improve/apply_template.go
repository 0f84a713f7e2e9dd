package improve

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// Template is tuning.Template: a plan family's template in force.
type Template = tuning.Template

// TemplateValidation is the validation of a template change: the
// forbidden-change checks (the plan decodes with the plan decoder, names
// its family, bounds its steps' timeouts and retries, carries no
// secret), and no replay: a replay reads the recorded model answers, so
// it proves nothing about the plan a family's goals will run.
func TemplateValidation(c event.Change) event.Validation {
	v := event.Validation{Method: "forbidden-checks"}
	tc := c.Template
	switch {
	case tc == nil:
		v.Summary = "forbidden-change checks only"
	case tc.Plan == "":
		v.Summary = fmt.Sprintf("forbidden-change checks only: family %s is left without a template; "+
			"a replay reads the recorded model answers, so it proves nothing about a template", tc.Family)
	default:
		steps := 0
		if p, err := tuning.ParseTemplate(tc.Family, tc.Plan); err == nil {
			steps = len(p.Steps)
		}
		v.Summary = fmt.Sprintf("forbidden-change checks only: the template decodes as a plan of family %s (%d steps, sha256 %.12s); "+
			"a replay reads the recorded model answers, so it proves nothing about a template", tc.Family, steps, tc.Hash)
	}
	return v
}

// CheckTemplate validates a template proposal against the state in
// force: its change and rollback pass the forbidden-change checks, and
// its rollback restores the family's template in force now (one that
// another proposal changed since this one was made is refused: its
// rollback would restore a template that is no longer there).
func CheckTemplate(st *State, p *Proposal) (event.Validation, error) {
	if err := Forbidden(p.Change); err != nil {
		return event.Validation{}, err
	}
	rb := p.Rollback.Template
	if rb == nil || p.Change.Template == nil || rb.Family != p.Change.Template.Family {
		return event.Validation{}, fmt.Errorf("%w: a template proposal's rollback is a template of the same family", ErrForbidden)
	}
	cur, _ := st.Template(rb.Family)
	if cur.Hash != rb.Hash {
		return event.Validation{}, fmt.Errorf("%w: the template of family %s changed since the proposal was made (in force: %s; its rollback restores: %s)",
			ErrForbidden, rb.Family, hashOrNone(cur.Hash), hashOrNone(rb.Hash))
	}
	return TemplateValidation(p.Change), nil
}

// templateRevertable reports whether the rollback of template proposal p
// may be applied: the family's template in force is still p's (another
// proposal may have replaced it since).
func templateRevertable(st *State, p *Proposal) bool {
	cur, _ := st.Template(p.Change.Template.Family)
	return cur.Hash == p.Change.Template.Hash
}

func hashOrNone(h string) string {
	if h == "" {
		return "none"
	}
	return "sha256 " + h[:min(12, len(h))]
}

// Template returns the template in force for a plan family: what the
// node's planner plans a goal of the family with neither a plan file nor
// text from.
func (l *Loop) Template(family string) (Template, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.state.Template(family)
}
