package planner

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// SourceTemplate is the provenance (PlanProposedData.Source) of a plan
// made from a family's template.
const SourceTemplate = "template"

// ErrNoTemplate: a goal of a family with neither a plan file nor text,
// and the family has no template.
var ErrNoTemplate = errors.New("planner: the goal's family has no template")

// Templates gives the template in force for a plan family: the plan
// file's text an approved proposal made the family's template
// (docs/improve.md), and whether there is one. The node wires it to its
// self-improvement fold (roles/improve.Loop.Template).
type Templates func(family string) (text string, ok bool)

// TemplateSource plans goals that name a plan family and have neither a
// plan file nor text: it parses the family's template with the plan
// decoder, as a plan file. Like a plan file, a template is planned at
// once, unclaimed: every planner folds the same templates, and the
// orchestrator takes the first proposal of a revision.
type TemplateSource struct {
	// Lookup gives the template in force.
	Lookup Templates
}

var _ Source = TemplateSource{}

// Name is "template".
func (TemplateSource) Name() string { return SourceTemplate }

// Plan parses the template of goal.Family. The plan's goal is the
// template's, or the submitted goal when the template names none.
func (s TemplateSource) Plan(_ context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error) {
	text, ok := "", false
	if s.Lookup != nil && goal.Family != "" {
		text, ok = s.Lookup(goal.Family)
	}
	if !ok {
		return nil, fmt.Errorf("run %s: %w: family %q has none; submit a plan file (agentctl goal submit -f plan.yaml) or a text goal, "+
			"or approve a template proposal of the family (agentctl proposal ls)", run, ErrNoTemplate, goal.Family)
	}
	p, err := plan.Parse("template/"+goal.Family, []byte(text))
	if err != nil {
		return nil, fmt.Errorf("run %s: the template of family %s: %w", run, goal.Family, err)
	}
	if p.Family != goal.Family {
		return nil, fmt.Errorf("run %s: the template of family %s names family %q", run, goal.Family, p.Family)
	}
	if p.Goal == "" {
		p.Goal = goal.Goal
	}
	return p, nil
}
