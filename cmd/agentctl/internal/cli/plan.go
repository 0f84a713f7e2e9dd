package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// Output formats only plan show has (cobra annotation "formats").
const (
	formatYAML    = "yaml"
	formatMermaid = "mermaid"
)

func (a *app) planCmd() *cobra.Command {
	return group("plan", "Show a run's plan revisions and what changed between them",
		"Every plan a planner proposed for a run is in the ledger (plan.proposed), one\nrevision each; the orchestrator accepts them in turn. These commands read\nthem from the run's audit, so any revision can be shown or compared.",
		a.planShowCmd(), a.planDiffCmd())
}

// planRevision is one plan.proposed of a run, as plan show prints it with
// -o json.
type planRevision struct {
	Run      string             `json:"run"`
	Revision int                `json:"revision"`
	Source   string             `json:"source"`
	Accepted bool               `json:"accepted"`
	Planner  *event.PlannerInfo `json:"planner_info,omitempty"`
	// Rationale says why a replanned revision changed the plan.
	Rationale string     `json:"rationale,omitempty"`
	Plan      event.Plan `json:"plan"`
	// Hypotheses are the plan's, with the evidence of the run's steps
	// and a verdict each (planbranch.go).
	Hypotheses []core.HypothesisView `json:"hypotheses,omitempty"`
}

// planRevisions reads every plan revision proposed for run (an id or a
// unique prefix), in the ledger's order.
func (a *app) planRevisions(ctx context.Context, id string) (string, []planRevision, error) {
	c, err := a.client()
	if err != nil {
		return "", nil, err
	}
	sum, err := c.RunSummary(ctx, id)
	if err != nil {
		return "", nil, err
	}
	var revs []planRevision
	accepted := map[int]bool{}
	// Only the plan events: the node filters, so a run of thousands of
	// steps costs its revisions, not its steps.
	req := api.AuditRequest{Run: sum.ID, Types: []string{string(event.GoalSubmitted), string(event.PlanProposed), string(event.PlanAccepted)}}
	for l, err := range c.AuditLines(ctx, req) {
		if err != nil {
			return "", nil, err
		}
		switch event.Type(l.Type) {
		case event.GoalSubmitted:
			// A goal that carries its plan is revision 1, as the
			// orchestrator plans it (plan.FromGoal); the planner's
			// proposal of it comes later, or never.
			var g event.GoalSubmittedData
			if json.Unmarshal(l.Data, &g) != nil {
				continue
			}
			if p := plan.FromGoal(g); p != nil && len(revs) == 0 {
				revs = append(revs, planRevision{Run: sum.ID, Revision: 1, Source: core.FileSource, Plan: *p})
			}
		case event.PlanProposed:
			var p event.PlanProposedData
			if err := json.Unmarshal(l.Data, &p); err != nil {
				return "", nil, fmt.Errorf("plan.proposed at seq %d: %w", l.Seq, err)
			}
			if slices.ContainsFunc(revs, func(r planRevision) bool { return r.Revision == p.Revision }) {
				continue // a second proposal of a revision is ignored, as the orchestrator does
			}
			revs = append(revs, planRevision{Run: sum.ID, Revision: p.Revision, Source: p.Source, Planner: p.Planner,
				Rationale: p.Rationale, Plan: p.Plan})
		case event.PlanAccepted:
			var p event.PlanAcceptedData
			if json.Unmarshal(l.Data, &p) == nil {
				accepted[p.Revision] = true
			}
		}
	}
	for i := range revs {
		revs[i].Accepted = accepted[revs[i].Revision]
	}
	if len(revs) == 0 {
		err := fmt.Errorf("run %s has no plan yet (status %s)", sum.ID, sum.Status)
		hint := "a planner has not answered; 'agentctl run show " + sum.ID + "' says why"
		if core.RunStatus(sum.Status).Terminal() {
			err = fmt.Errorf("run %s ended without a plan (status %s)", sum.ID, sum.Status)
			hint = "'agentctl run show " + sum.ID + "' says why"
			if sum.Reason != "" {
				hint = "it ended: " + sum.Reason
			}
		}
		return sum.ID, nil, api.WithHint(err, hint)
	}
	return sum.ID, revs, nil
}

// pick returns revision n of revs (0: the newest).
func pick(run string, revs []planRevision, n int) (planRevision, error) {
	if n == 0 {
		return revs[len(revs)-1], nil
	}
	for _, r := range revs {
		if r.Revision == n {
			return r, nil
		}
	}
	have := make([]string, len(revs))
	for i, r := range revs {
		have[i] = fmt.Sprint(r.Revision)
	}
	return planRevision{}, fmt.Errorf("run %s has no plan revision %d (it has %s)", run, n, strings.Join(have, ", "))
}

func (a *app) planShowCmd() *cobra.Command {
	var revision int
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a plan revision of a run: text, JSON, YAML (a plan file) or Mermaid",
		Long: `Show the plan the planner proposed for RUN: the newest revision, or
--revision N. Text lists the steps by subgoal with their commands and
dependencies and branches ("→ on failure: diagnose"), then the plan's
hypotheses, each with its verdict (supported, refuted, mixed or
untested) and the evidence of the steps that test it; -o json prints the
revision with its provenance (the model's, for LLM plans) and its
hypotheses; -o yaml prints it as a plan file, which 'agentctl goal
submit -f' accepts as it is; -o mermaid prints a Mermaid flowchart of the
DAG, branch edges labelled success or failure.`,
		Example: `  agentctl plan show 0190a3c2
  agentctl plan show 0190a3c2 -o yaml > plan.yaml && agentctl goal submit -f plan.yaml
  agentctl plan show 0190a3c2 --revision 1 -o mermaid`,
		Annotations: map[string]string{"formats": formatYAML + "," + formatMermaid},
		Args:        args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			run, revs, err := a.planRevisions(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			r, err := pick(run, revs, revision)
			if err != nil {
				return err
			}
			if r.Hypotheses, err = a.hypotheses(cmd.Context(), run, r); err != nil {
				return err
			}
			switch a.output {
			case formatYAML:
				b, err := planYAML(r.Plan)
				if err != nil {
					return err
				}
				_, err = a.env.Stdout.Write(b)
				return err
			case formatMermaid:
				_, err := io.WriteString(a.env.Stdout, planMermaid(r.Plan))
				return err
			case formatText:
				renderPlan(a.env.Stdout, r, len(revs))
				return nil
			default:
				return a.writeJSON(r)
			}
		},
	}
	cmd.Flags().IntVar(&revision, "revision", 0, "revision to show (default: the newest)")
	return cmd
}

// renderPlan prints a revision for people.
func renderPlan(w io.Writer, r planRevision, of int) {
	state := "proposed"
	if r.Accepted {
		state = "accepted"
	}
	fmt.Fprintf(w, "run %s  plan revision %d of %d (%s, from %s)\n", r.Run, r.Revision, of, state, r.Source)
	if r.Plan.Goal != "" {
		fmt.Fprintf(w, "goal: %s\n", r.Plan.Goal)
	}
	if p := r.Planner; p != nil {
		fmt.Fprintf(w, "model: %s (served %s), %d+%d tokens, %s\n", p.Model, dash(p.ServedModel), p.PromptTokens, p.CompletionTokens, p.Latency)
		renderCandidates(w, p) // plancandidates.go
	}
	if r.Plan.Open {
		fmt.Fprintln(w, "open: planned a step at a time; the next steps come from these steps' results")
	}
	if r.Rationale != "" {
		fmt.Fprintf(w, "rationale: %s\n", oneLine(r.Rationale))
	}
	titles := map[string]string{}
	for _, sg := range r.Plan.Subgoals {
		titles[sg.ID] = sg.Title
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	last := "\x00"
	for _, s := range r.Plan.Steps {
		if s.Subgoal != last {
			last = s.Subgoal
			switch {
			case s.Subgoal == "":
				fmt.Fprintln(tw, "\n(no subgoal)")
			case titles[s.Subgoal] != "":
				fmt.Fprintf(tw, "\n%s: %s\n", s.Subgoal, titles[s.Subgoal])
			default:
				fmt.Fprintf(tw, "\n%s\n", s.Subgoal)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s\n", s.ID, s.Kind, truncate(oneLine(stepAction(s)), 60), depsCell(s.DependsOn), branchCell(s))
	}
	tw.Flush()
	renderHypotheses(w, r.Hypotheses)
}

// stepAction is what a step does, in one phrase.
func stepAction(s event.Step) string {
	switch s.Kind {
	case event.KindShell:
		return s.Run
	case event.KindFileWrite:
		return "write " + s.Path
	case event.KindFilePatch:
		return "patch"
	case event.KindGitWorktree:
		return "git worktree"
	case event.KindGitFinish:
		return "git push + pull request"
	}
	return "-"
}

// fileStep is a step as a plan file writes it.
type fileStep struct {
	ID           string            `yaml:"id"`
	Title        string            `yaml:"title,omitempty"`
	Kind         string            `yaml:"kind,omitempty"`
	Run          string            `yaml:"run,omitempty"`
	DependsOn    []string          `yaml:"depends_on,omitempty,flow"`
	Timeout      string            `yaml:"timeout,omitempty"`
	Retries      int               `yaml:"retries,omitempty"`
	Backoff      string            `yaml:"backoff,omitempty"`
	Idempotent   bool              `yaml:"idempotent,omitempty"`
	Creates      string            `yaml:"creates,omitempty"`
	Check        string            `yaml:"check,omitempty"`
	OnFailure    string            `yaml:"on_failure,omitempty"`
	Env          map[string]string `yaml:"env,omitempty"`
	Cwd          string            `yaml:"cwd,omitempty"`
	Capabilities []string          `yaml:"capabilities,omitempty,flow"`
	Path         string            `yaml:"path,omitempty"`
	Content      string            `yaml:"content,omitempty"`
	Mode         string            `yaml:"mode,omitempty"`
	Patch        string            `yaml:"patch,omitempty"`
	Compensate   string            `yaml:"compensate,omitempty"`
	RunAs        string            `yaml:"run_as,omitempty"`
	Target       string            `yaml:"target,omitempty"`
	Criteria     string            `yaml:"criteria,omitempty"`
	Next         []fileBranch      `yaml:"next,omitempty,flow"`
	Tests        []fileTest        `yaml:"tests,omitempty,flow"`
	Tool         string            `yaml:"tool,omitempty"`
	Args         any               `yaml:"args,omitempty"`
	Facts        any               `yaml:"facts,omitempty"`
	Releases     []string          `yaml:"releases,omitempty,flow"`
	Outputs      []string          `yaml:"outputs,omitempty,flow"`
	Inputs       any               `yaml:"inputs,omitempty"`
	Questions    []fileQuestion    `yaml:"questions,omitempty"`
	Sources      []string          `yaml:"sources,omitempty"`
}

// fileQuestion is a research step's question as a plan file writes it.
type fileQuestion struct {
	Q        string `yaml:"q"`
	Criteria string `yaml:"criteria,omitempty"`
	Critical bool   `yaml:"critical,omitempty"`
}

type fileSubgoal struct {
	ID    string     `yaml:"id"`
	Title string     `yaml:"title,omitempty"`
	Steps []fileStep `yaml:"steps"`
}

type planFile struct {
	Goal       string           `yaml:"goal,omitempty"`
	Family     string           `yaml:"family,omitempty"`
	Git        *fileGit         `yaml:"git,omitempty"`
	Hypotheses []fileHypothesis `yaml:"hypotheses,omitempty"`
	Steps      []fileStep       `yaml:"steps,omitempty"`
	Subgoals   []fileSubgoal    `yaml:"subgoals,omitempty"`
}

// planYAML writes p as a hierarchical plan file: the steps of each subgoal
// under it, the others at the top; defaults are left out.
func planYAML(p event.Plan) ([]byte, error) {
	git, p := gitPlanFile(p) // plangit.go
	f := planFile{Goal: p.Goal, Family: p.Family, Git: git, Hypotheses: fileHypotheses(p)}
	idx := map[string]int{}
	for _, sg := range p.Subgoals {
		idx[sg.ID] = len(f.Subgoals)
		f.Subgoals = append(f.Subgoals, fileSubgoal{ID: sg.ID, Title: sg.Title})
	}
	for _, s := range p.Steps {
		fs := fileStep{
			ID: s.ID, Title: s.Title, Run: s.Run, DependsOn: s.DependsOn, Retries: s.Retries, Idempotent: s.Idempotent,
			Creates: s.Creates, Check: s.Check, Env: s.Env, Cwd: s.Cwd, Capabilities: s.Capabilities,
			Path: s.Path, Content: s.Content, Mode: s.Mode, Patch: s.Patch, Compensate: s.Compensate, RunAs: s.RunAs,
			Target: s.Target, Criteria: s.Criteria, Tool: s.Tool, Releases: s.Releases,
			Outputs: s.Outputs, Sources: s.Sources,
		}
		for _, q := range s.Questions {
			fs.Questions = append(fs.Questions, fileQuestion(q))
		}
		if len(s.Args) > 0 {
			if err := json.Unmarshal(s.Args, &fs.Args); err != nil {
				return nil, fmt.Errorf("step %s: its args: %w", s.ID, err)
			}
		}
		if len(s.Facts) > 0 {
			// The facts as their JSON names say them, which are the
			// plan file's too.
			raw, err := json.Marshal(s.Facts)
			if err == nil {
				err = json.Unmarshal(raw, &fs.Facts)
			}
			if err != nil {
				return nil, fmt.Errorf("step %s: its facts: %w", s.ID, err)
			}
		}
		if len(s.Inputs) > 0 {
			// As the JSON names say them, which are the plan file's too.
			raw, err := json.Marshal(s.Inputs)
			if err == nil {
				err = json.Unmarshal(raw, &fs.Inputs)
			}
			if err != nil {
				return nil, fmt.Errorf("step %s: its inputs: %w", s.ID, err)
			}
		}
		if !(s.Kind == event.KindShell && s.Run != "") && !(s.Kind == event.KindNoop && s.Run == "") {
			fs.Kind = string(s.Kind)
		}
		branchFields(&fs, s)
		if s.Timeout > 0 {
			fs.Timeout = s.Timeout.String()
		}
		if s.Backoff > 0 {
			fs.Backoff = s.Backoff.String()
		}
		if s.OnFailure != "" && s.OnFailure != event.OnFailureAbort {
			fs.OnFailure = string(s.OnFailure)
		}
		if i, ok := idx[s.Subgoal]; ok && s.Subgoal != "" {
			f.Subgoals[i].Steps = append(f.Subgoals[i].Steps, fs)
		} else {
			f.Steps = append(f.Steps, fs)
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode the plan as YAML: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// planMermaid draws p as a Mermaid flowchart: subgoals as subgraphs,
// dependencies as edges from the step depended on.
func planMermaid(p event.Plan) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	node := map[string]string{}
	for i, s := range p.Steps {
		node[s.ID] = fmt.Sprintf("s%d", i)
	}
	label := func(s event.Step) string {
		l := s.ID
		if a := stepAction(s); a != "-" {
			l += ": " + truncate(oneLine(a), 40)
		}
		return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(l)
	}
	in := map[string][]event.Step{}
	for _, s := range p.Steps {
		in[s.Subgoal] = append(in[s.Subgoal], s)
	}
	for _, s := range in[""] {
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", node[s.ID], label(s))
	}
	for i, sg := range p.Subgoals {
		title := sg.ID
		if sg.Title != "" {
			title += ": " + sg.Title
		}
		fmt.Fprintf(&b, "  subgraph g%d[\"%s\"]\n", i, strings.ReplaceAll(title, `"`, "#quot;"))
		for _, s := range in[sg.ID] {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", node[s.ID], label(s))
		}
		b.WriteString("  end\n")
	}
	spec := map[string]event.Step{}
	for _, s := range p.Steps {
		spec[s.ID] = s
	}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if on := branchEdge(spec[d], s.ID); on != "" {
				fmt.Fprintf(&b, "  %s -->|%s| %s\n", node[d], on, node[s.ID])
				continue
			}
			fmt.Fprintf(&b, "  %s --> %s\n", node[d], node[s.ID])
		}
	}
	return b.String()
}

// planDiff is what changed from one revision to another.
type planDiff struct {
	Run     string             `json:"run"`
	From    int                `json:"from"`
	To      int                `json:"to"`
	Added   []event.Step       `json:"added"`
	Removed []event.Step       `json:"removed"`
	Changed []stepChange       `json:"changed"`
	Same    int                `json:"unchanged"`
	Planner *event.PlannerInfo `json:"planner_info,omitempty"`
	// Rationale is the TO revision's, when it was replanned.
	Rationale string `json:"rationale,omitempty"`
}

type stepChange struct {
	ID     string     `json:"id"`
	Fields []string   `json:"fields"`
	From   event.Step `json:"from"`
	To     event.Step `json:"to"`
}

func (a *app) planDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff RUN FROM TO",
		Short: "Show what changed between two plan revisions of a run",
		Long: `Compare two plan revisions of RUN: the steps added, removed and changed
(with the fields that changed, old → new), by step id, and the rationale
the planner gave for a replanned revision. -o json prints
{"added","removed","changed":[{"id","fields","from","to"}],"unchanged"}.`,
		Example: `  agentctl plan diff 0190a3c2 1 2`,
		Args:    args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var from, to int
			if _, err := fmt.Sscan(argv[1], &from); err != nil || from < 1 {
				return usagef("FROM must be a revision number, got %q", argv[1])
			}
			if _, err := fmt.Sscan(argv[2], &to); err != nil || to < 1 {
				return usagef("TO must be a revision number, got %q", argv[2])
			}
			run, revs, err := a.planRevisions(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			rf, err := pick(run, revs, from)
			if err != nil {
				return err
			}
			rt, err := pick(run, revs, to)
			if err != nil {
				return err
			}
			d := diffPlans(rf.Plan, rt.Plan)
			d.Run, d.From, d.To, d.Planner, d.Rationale = run, from, to, rt.Planner, rt.Rationale
			if a.output != formatText {
				return a.writeJSON(d)
			}
			renderDiff(a.env.Stdout, d)
			return nil
		},
	}
}

// diffPlans compares two plans step by step.
func diffPlans(from, to event.Plan) planDiff {
	d := planDiff{Added: []event.Step{}, Removed: []event.Step{}, Changed: []stepChange{}}
	old := map[string]event.Step{}
	for _, s := range from.Steps {
		old[s.ID] = s
	}
	seen := map[string]bool{}
	for _, s := range to.Steps {
		seen[s.ID] = true
		o, ok := old[s.ID]
		if !ok {
			d.Added = append(d.Added, s)
			continue
		}
		if fields := changedFields(o, s); len(fields) > 0 {
			d.Changed = append(d.Changed, stepChange{ID: s.ID, Fields: fields, From: o, To: s})
		} else {
			d.Same++
		}
	}
	for _, s := range from.Steps {
		if !seen[s.ID] {
			d.Removed = append(d.Removed, s)
		}
	}
	return d
}

// changedFields lists the JSON fields that differ between two steps.
func changedFields(a, b event.Step) []string {
	var ma, mb map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []string
	for k, v := range ma {
		if !bytes.Equal(v, mb[k]) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// renderDiff prints a diff for people.
func renderDiff(w io.Writer, d planDiff) {
	fmt.Fprintf(w, "run %s: plan revision %d → %d: %d added, %d removed, %d changed, %d unchanged\n",
		d.Run, d.From, d.To, len(d.Added), len(d.Removed), len(d.Changed), d.Same)
	if d.Rationale != "" {
		fmt.Fprintf(w, "rationale: %s\n", oneLine(d.Rationale))
	}
	for _, s := range d.Added {
		fmt.Fprintf(w, "+ %s  %s\n", s.ID, truncate(oneLine(stepAction(s)), 70))
	}
	for _, s := range d.Removed {
		fmt.Fprintf(w, "- %s  %s\n", s.ID, truncate(oneLine(stepAction(s)), 70))
	}
	for _, c := range d.Changed {
		fmt.Fprintf(w, "~ %s\n", c.ID)
		var ma, mb map[string]json.RawMessage
		ja, _ := json.Marshal(c.From)
		jb, _ := json.Marshal(c.To)
		_ = json.Unmarshal(ja, &ma)
		_ = json.Unmarshal(jb, &mb)
		for _, f := range c.Fields {
			fmt.Fprintf(w, "    %s: %s → %s\n", f, orNone(ma[f]), orNone(mb[f]))
		}
	}
}

func orNone(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	return string(v)
}
