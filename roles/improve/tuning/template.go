package tuning

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// MaxTemplateBytes bounds a template's plan text: a proposal carries it
// twice (change and rollback) in one event.
const MaxTemplateBytes = 64 << 10

// Template is a plan family's template as the ledger made it: the plan
// file a goal of the family submitted with neither a plan file nor text
// is planned from (roles/planner).
type Template struct {
	Family string `json:"family"`
	// Plan is the plan file's text (YAML or JSON), Hash its SHA-256.
	Plan string `json:"plan"`
	Hash string `json:"hash"`
	// Proposal made it; Seq is the ledger position of its tuning.changed.
	Proposal string `json:"proposal"`
	Seq      uint64 `json:"seq"`
}

// TemplateHash is the SHA-256 of a template's plan text, in hex.
func TemplateHash(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// TemplateName is the name a family's template is parsed under (and
// what its errors say).
func TemplateName(family string) string { return "template/" + family }

// ParseTemplate decodes a template's plan text with the plan decoder
// (plan.Parse, the one plan files go through) and checks what no
// proposal may change through a template: the plan names the template's
// family, is not open (planned a step at a time needs a model), and
// bounds every step's timeout and retries as step defaults are bounded
// (MaxTimeout, MaxRetries) — a template raises no budget. Its commands
// are judged by the policy in force when its runs run, like any plan's:
// a template gains no permission. The error wraps ErrForbidden.
func ParseTemplate(family, text string) (*event.Plan, error) {
	if len(text) > MaxTemplateBytes {
		return nil, fmt.Errorf("%w: template of family %s: %d bytes, at most %d", ErrForbidden, family, len(text), MaxTemplateBytes)
	}
	p, err := plan.Parse(TemplateName(family), []byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: template of family %s is not a valid plan: %w", ErrForbidden, family, err)
	}
	if p.Family != family {
		return nil, fmt.Errorf("%w: template of family %s names family %q: a template's plan names its own family (family: %s)", ErrForbidden, family, p.Family, family)
	}
	if p.Open {
		return nil, fmt.Errorf("%w: template of family %s is an open plan: a template is a whole plan", ErrForbidden, family)
	}
	for _, s := range p.Steps {
		if s.Timeout.Std() > MaxTimeout {
			return nil, fmt.Errorf("%w: template of family %s: step %s: timeout %s, at most %s", ErrForbidden, family, s.ID, s.Timeout, MaxTimeout)
		}
		if s.Retries > MaxRetries {
			return nil, fmt.Errorf("%w: template of family %s: step %s: %d retries, at most %d", ErrForbidden, family, s.ID, s.Retries, MaxRetries)
		}
	}
	return p, nil
}

// checkTemplate is Forbidden's check of a template change: a valid
// family, a hash that is the plan's, and a plan ParseTemplate accepts
// (or no plan and no hash: the family has no template).
func checkTemplate(t *event.TemplateChange) error {
	if err := event.ValidFamily(t.Family); err != nil {
		return fmt.Errorf("%w: a template change names a valid family: %w", ErrForbidden, err)
	}
	if t.Plan == "" {
		if t.Hash != "" {
			return fmt.Errorf("%w: template of family %s: a hash and no plan", ErrForbidden, t.Family)
		}
		return nil
	}
	if h := TemplateHash(t.Plan); t.Hash != h {
		return fmt.Errorf("%w: template of family %s hashes to %s, not %q", ErrForbidden, t.Family, h, t.Hash)
	}
	_, err := ParseTemplate(t.Family, t.Plan)
	return err
}

// template applies a template change (checked) of proposal at seq.
func (s *State) template(t event.TemplateChange, proposal string, seq uint64) {
	if t.Plan == "" {
		delete(s.Templates, t.Family)
		return
	}
	if s.Templates == nil {
		s.Templates = map[string]Template{}
	}
	s.Templates[t.Family] = Template{Family: t.Family, Plan: t.Plan, Hash: t.Hash, Proposal: proposal, Seq: seq}
}

// Template returns the template in force for family.
func (s *State) Template(family string) (Template, bool) {
	if s == nil {
		return Template{}, false
	}
	t, ok := s.Templates[family]
	return t, ok
}

// TemplateChangeOf is the template change that restores what is in force
// for family now (a proposal's rollback): its template, or none.
func (s *State) TemplateChangeOf(family string) event.Change {
	tc := &event.TemplateChange{Family: family}
	if t, ok := s.Template(family); ok {
		tc.Plan, tc.Hash = t.Plan, t.Hash
	}
	return event.Change{Kind: event.ChangeTemplate, Setting: event.SettingTemplate, Template: tc}
}
