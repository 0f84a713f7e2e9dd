package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/spf13/cobra"
)

func (a *app) goalCmd() *cobra.Command {
	return group("goal", "Submit goals", "A goal starts a run: from a plan file, or as free text for an LLM planner.", a.goalSubmitCmd())
}

type submitOpts struct {
	file string
	wait bool
	// family is a text goal's plan family (GoalSubmittedData.Family).
	family string
	// traceparent is the submitter's W3C trace context
	// (GoalSubmittedData.TraceParent): --traceparent, else TRACEPARENT.
	traceparent string
}

func (a *app) goalSubmitCmd() *cobra.Command {
	var o submitOpts
	cmd := &cobra.Command{
		Use:   "submit (-f FILE | TEXT... | --family NAME)",
		Short: "Submit a goal: a plan file, free text, or a plan family's template",
		Long: `Submit a goal and start a run.

With -f, the plan file (YAML or JSON; '-' reads stdin) is checked here
first: a malformed plan prints every problem with file:line:col and exits
1, and nothing is submitted. At most 1 MiB is read; a FIFO or stdin that
nobody writes to is waited on until Ctrl-C. Otherwise TEXT is a free-text
goal for the LLM planner. With --family alone (no -f, no TEXT), the goal
is planned from the family's template: the plan an approved proposal
made the family's (agentctl improve settings lists them; a family with
none rejects the run, docs/improve.md).

The goal is published as a goal.submitted event signed with your operator
credentials. Without --wait, agentctl prints the new run id (-o json: the
run object as submitted) and returns. With --wait it follows the run,
printing a line whenever a step changes ("12:00:01 build  running  (attempt
1 on node-a)"; -o jsonl: the run object at each change; -o json: the final
run object), and exits 0 if the run succeeded, 3 if it failed, 4 if it was
cancelled. Ctrl-C stops waiting; the run keeps going.`,
		Example: `  agentctl goal submit -f deploy.yaml
  agentctl goal submit -f deploy.yaml --wait
  RUN=$(agentctl goal submit -f build.json) && agentctl run show "$RUN"
  agentctl goal submit "upgrade the staging database to postgres 17"
  agentctl goal submit --family nightly "check the nightly build's logs"
  agentctl goal submit --family nightly --wait     # the family's template`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			text := strings.TrimSpace(strings.Join(argv, " "))
			switch {
			case o.file != "" && text != "":
				return usagef("give either -f FILE or TEXT, not both")
			case o.file == "" && text == "" && o.family == "":
				return usagef("give a plan file (-f FILE), the goal as TEXT, or a plan family (--family NAME) to run its template")
			case o.family != "" && o.file != "":
				return usagef("--family is for TEXT goals: a plan file names its family itself (family: NAME)")
			case o.family != "":
				if err := event.ValidFamily(o.family); err != nil {
					return usagef("--family: %v", err)
				}
			}
			if o.traceparent == "" {
				o.traceparent = strings.TrimSpace(a.env.Getenv("TRACEPARENT"))
			}
			if o.traceparent != "" {
				if _, _, _, err := event.ParseTraceParent(o.traceparent); err != nil {
					return usagef("--traceparent (or TRACEPARENT): %v", err)
				}
			}
			return a.goalSubmit(cmd.Context(), o, text)
		},
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "plan file (YAML or JSON); - reads stdin")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "follow the run until it finishes")
	cmd.Flags().StringVar(&o.family, "family", "", "the plan family of a TEXT goal: its runs share the facts of scope family:NAME (docs/memory.md); alone, run the family's template")
	cmd.Flags().StringVar(&o.traceparent, "traceparent", "", "the W3C trace context the run's trace joins (default: $TRACEPARENT; docs/telemetry.md)")
	return cmd
}

func (a *app) goalSubmit(ctx context.Context, o submitOpts, text string) error {
	// The connection and the root check are made while the plan is read,
	// checked and signed (ahead.go). Not for a plan on stdin, which may
	// come much later, or never.
	if o.file != "-" {
		a.dialAhead(ctx)
	}
	data := event.GoalSubmittedData{Goal: text, Text: text, Family: o.family}
	if text == "" && o.file == "" {
		data.Goal = "the template of family " + o.family
	}
	if o.file != "" {
		var err error
		if data, err = a.readPlan(ctx, o.file); err != nil {
			return err
		}
	}
	data.TraceParent = o.traceparent
	runID := event.NewID()
	d, err := event.NewDraft(event.GoalSubmitted, runID, data)
	if err != nil {
		return err
	}
	if data.Plan != nil && len(d.Data) > envelope.MaxEventBytes {
		// The file and its plan together are too large for one event:
		// the file alone goes, and a planner plans it (one round trip
		// more before the first step starts, nothing else changes).
		data.Plan = nil
		if d, err = event.NewDraft(event.GoalSubmitted, runID, data); err != nil {
			return err
		}
	}
	// The rules signing applies (size, secrets) judge the event now, so a
	// plan that passed its check but could never be published says why
	// here, before any connection is made.
	if err := envelope.CheckDraft(d); err != nil {
		if errors.Is(err, envelope.ErrTooLarge) && o.file != "" {
			err = fmt.Errorf("%w: the goal.submitted event carrying it is %d bytes JSON-encoded, over the %d KiB limit of one event; make the plan smaller",
				envelope.ErrTooLarge, len(d.Data), envelope.MaxEventBytes>>10)
		}
		if o.file != "" {
			return &planError{name: planName(o.file), err: err}
		}
		return fmt.Errorf("submit goal: %w", err)
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("submit goal: %w", err)
	}
	if o.wait {
		return a.follow(ctx, runID)
	}
	if a.output == formatText {
		fmt.Fprintln(a.env.Stdout, runID)
		return nil
	}
	return a.writeJSON(&api.Run{ID: runID, Goal: data.Goal, Status: event.RunSubmitted, CreatedAt: d.Time, Steps: []api.Step{}})
}

// readPlan reads and checks a plan file; its problems are an error listing
// each with its location.
func (a *app) readPlan(ctx context.Context, path string) (event.GoalSubmittedData, error) {
	b, name, err := a.readPlanFile(ctx, path)
	switch {
	case errors.Is(err, errTooLarge):
		return event.GoalSubmittedData{}, fmt.Errorf("plan file %s is larger than the %d KiB limit; nothing was submitted", name, plan.MaxFileBytes>>10)
	case err != nil:
		return event.GoalSubmittedData{}, fmt.Errorf("read plan: %w", err)
	}
	p, err := plan.Parse(name, b)
	if err != nil {
		return event.GoalSubmittedData{}, &planError{name: name, err: err}
	}
	base := filepath.Base(name)
	goal := p.Goal
	if goal == "" {
		goal = base
	}
	// The plan as a planner would propose it (its goal defaulted to the
	// goal's): the leader plans the run from it without waiting for a
	// planner (docs/architecture.md, the hops to a first process).
	p.Goal = goal
	return event.GoalSubmittedData{Goal: goal, PlanFile: string(b), PlanName: base, Plan: p}, nil
}

// planError reports a plan that did not parse, one problem per line.
type planError struct {
	name string
	err  error
}

func (e *planError) Error() string {
	var pe *plan.Error
	if !errors.As(e.err, &pe) {
		return fmt.Sprintf("plan %s: %v; nothing was submitted", e.name, e.err)
	}
	var b strings.Builder
	n := len(pe.Problems) + pe.Omitted
	fmt.Fprintf(&b, "plan %s has %d problem%s; nothing was submitted", e.name, n, plural(n))
	for _, line := range strings.Split(pe.Error(), "\n") {
		b.WriteString("\n  " + line)
	}
	return b.String()
}

func (e *planError) Unwrap() error { return e.err }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
