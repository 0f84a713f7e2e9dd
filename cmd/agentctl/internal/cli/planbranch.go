package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// Branches and hypotheses in plan show: the branch lines under a step,
// the hypotheses with the evidence the run's steps gave, the plan-file
// form of next, tests and hypotheses, and the labelled Mermaid edges.

// hypotheses gives the hypotheses of revision r of run with the evidence
// of the run's steps, when r is the revision the run runs (the steps'
// outcomes belong to it); for another revision every hypothesis is
// untested. Nil when the plan has none.
func (a *app) hypotheses(ctx context.Context, run string, r planRevision) ([]core.HypothesisView, error) {
	if len(r.Plan.Hypotheses) == 0 {
		return nil, nil
	}
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	v, err := c.RunsGet(ctx, run)
	if err != nil {
		return nil, err
	}
	var steps []core.StepView
	if v.Revision == r.Revision {
		steps = v.Steps
	}
	return core.Hypotheses(r.Plan, steps), nil
}

// branchCell is the last cell of a step's row: its branches ("→ on
// failure: diagnose"), "" when it has none.
func branchCell(s event.Step) string {
	if len(s.Next) == 0 {
		return ""
	}
	parts := make([]string, len(s.Next))
	for i, b := range s.Next {
		parts[i] = fmt.Sprintf("→ on %s: %s", b.On, b.To)
	}
	return "\t" + strings.Join(parts, "  ")
}

// renderHypotheses prints the hypotheses section: each hypothesis with
// its verdict and statement, then the steps that test it, their status
// and what each said of it.
func renderHypotheses(w io.Writer, hs []core.HypothesisView) {
	if len(hs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nhypotheses")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range hs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", h.ID, h.Verdict, oneLine(h.Statement))
		for _, e := range h.Evidence {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", e.Step, e.Status, e.Evidence)
		}
	}
	tw.Flush()
}

// fileBranch is a branch as a plan file writes it.
type fileBranch struct {
	On string `yaml:"on"`
	To string `yaml:"to"`
}

// fileTest is a hypothesis test as a plan file writes it: the id alone
// when its evidence is the default, {hypothesis, success, failure}
// otherwise.
type fileTest event.HypothesisTest

// MarshalYAML writes the short form when it can.
func (t fileTest) MarshalYAML() (any, error) {
	if t.Success == "" && t.Failure == "" {
		return t.Hypothesis, nil
	}
	return struct {
		Hypothesis string `yaml:"hypothesis"`
		Success    string `yaml:"success,omitempty"`
		Failure    string `yaml:"failure,omitempty"`
	}{t.Hypothesis, string(t.Success), string(t.Failure)}, nil
}

// fileHypothesis is a hypothesis as a plan file writes it.
type fileHypothesis struct {
	ID        string `yaml:"id"`
	Statement string `yaml:"statement"`
}

// branchFields fills the plan-file form of s's next and tests into fs.
func branchFields(fs *fileStep, s event.Step) {
	for _, b := range s.Next {
		fs.Next = append(fs.Next, fileBranch{On: string(b.On), To: b.To})
	}
	for _, t := range s.Tests {
		fs.Tests = append(fs.Tests, fileTest(t))
	}
}

// fileHypotheses is the plan-file form of the plan's hypotheses.
func fileHypotheses(p event.Plan) []fileHypothesis {
	var out []fileHypothesis
	for _, h := range p.Hypotheses {
		out = append(out, fileHypothesis{ID: h.ID, Statement: h.Statement})
	}
	return out
}

// branchEdge is the label of the Mermaid edge from step from to step to:
// the outcome of from's branch to it, "" when it is a plain dependency.
func branchEdge(from event.Step, to string) string {
	for _, b := range from.Next {
		if b.To == to {
			return string(b.On)
		}
	}
	return ""
}
