package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/spf13/cobra"
)

func (a *app) gateCmd() *cobra.Command {
	return group("gate", "Answer the steps that wait for an operator: approve, edit, skip or deny",
		`A gate holds a step until operators answer it: the policy's verdict on its
command was confirm, or a step that is not idempotent may have partly run
on a node that was lost (needs-decision). Each answer is a gate.decided
event signed with your operator credentials, bound to the gate's subject
(a hash of exactly what was judged: command, working directory,
environment, user, file edit, policy version): if the step changes before
your answer is folded, the answer counts for nothing.

List the gates with 'gate ls', look at one with 'gate show', then approve,
edit, skip or deny it; or walk them all with 'gate review' in a terminal.
RUN may be any unique start or end of the run id.

When two operators answer one gate at once, the first answer in the ledger
that closes it wins; agentctl reads the gate's events up to yours, and if
another came first it exits 1 naming that answer and who gave it.`,
		a.gateLsCmd(), a.gateShowCmd(), a.gateApproveCmd(), a.gateEditCmd(),
		a.gateAnswerCmd(event.GateSkip, "End a gated step as skipped; its dependents run",
			`Publish a gate.decided event (skip): the step ends skipped and the steps
that depend on it run. --reason is required (it is recorded in the ledger).`),
		a.gateAnswerCmd(event.GateDeny, "Refuse a gated step: it fails with class policy",
			`Publish a gate.decided event (deny): the step fails with class policy,
and the run goes on as its plan says for a failed step. --reason is
required (it is recorded in the ledger).`),
		a.gateReviewCmd())
}

// gates reads every open gate gates.list answers for req, oldest first.
// A req.Run that no run starts with may be the end of a run id
// (api.Client.RunDetail): the gates of that run are read then.
func gates(ctx context.Context, c *api.Client, req api.GatesRequest) ([]api.Gate, error) {
	out, err := gatesOf(ctx, c, req)
	if errors.Is(err, api.ErrNotFound) && req.Run != "" {
		sum, serr := c.RunSummary(ctx, req.Run)
		switch {
		case serr == nil && sum.ID != req.Run:
			req.Run = sum.ID
			return gatesOf(ctx, c, req)
		case errors.Is(serr, api.ErrAmbiguous):
			return nil, serr
		}
	}
	return out, err
}

func gatesOf(ctx context.Context, c *api.Client, req api.GatesRequest) ([]api.Gate, error) {
	var out []api.Gate
	for g, err := range api.Walk(ctx, "", func(ctx context.Context, cursor string) (*api.Page[api.Gate], error) {
		r := req
		r.Cursor = cursor
		var p api.Page[api.Gate]
		if err := c.Call(ctx, api.MethodGatesList, r, &p); err != nil {
			return nil, err
		}
		return &p, nil
	}) {
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// findGate reads the open gate of step (a plan gate: "") of run.
func findGate(ctx context.Context, c *api.Client, run, step string) (*api.Gate, error) {
	gs, err := gates(ctx, c, api.GatesRequest{Run: run, Step: step})
	if err != nil {
		return nil, fmt.Errorf("read the gates of run %s: %w", run, err)
	}
	for i := range gs {
		if gs[i].Step == step {
			return &gs[i], nil
		}
	}
	what := fmt.Sprintf("step %s of run %s has no open gate", step, run)
	if step == "" {
		what = fmt.Sprintf("run %s has no open plan gate", run)
	}
	return nil, api.WithHint(fmt.Errorf("%s (nothing was published)", what),
		"agentctl gate ls lists the open gates; a gate closes once answered, or when it expires")
}

func (a *app) gateLsCmd() *cobra.Command {
	var run string
	c := &cobra.Command{
		Use:   "ls [--run RUN]",
		Short: "List the open gates: the steps waiting for an operator",
		Long: `List the open gates, oldest first: the run and step held, the kind of gate
(policy: the policy's verdict is confirm; needs-decision: an attempt may
have partly run on a lost node; plan: a plan revision awaits approval),
the risk level and rule of the verdict, how long it has waited, and the
approvals it has of those it needs.

-o json prints an array of gate objects (with the step as it would run,
the verdict and its highlights, the subject an answer must name), -o
jsonl one per line.`,
		Example: `  agentctl gate ls
  agentctl gate ls --run 0190a3c2 -o json | jq -r '.[].verdict.why'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			gs, err := gates(cmd.Context(), c, api.GatesRequest{Run: run})
			if err != nil {
				return err
			}
			if a.output != formatText {
				return writeList(a, gs)
			}
			if len(gs) == 0 {
				fmt.Fprintln(a.env.Stdout, "no open gates")
				return nil
			}
			t := a.table()
			fmt.Fprintln(t, "RUN\tSTEP\tKIND\tLEVEL\tRULE\tAGE\tAPPROVALS")
			now := time.Now()
			for _, g := range gs {
				level, rule := "-", "-"
				if g.Verdict != nil {
					level, rule = dash(g.Verdict.Level), dash(g.Verdict.Rule)
				}
				age := "-"
				if !g.Opened.IsZero() {
					age = fmtDuration(now.Sub(g.Opened))
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\n", g.Run, stepName(g), g.Kind, level, rule, age, len(g.Approvers), g.Approvals)
			}
			return t.Flush()
		},
	}
	c.Flags().StringVar(&run, "run", "", "only the gates of this run (id, or a unique start or end of it)")
	return c
}

// stepName is the gated step, or "(plan)" for a plan gate.
func stepName(g api.Gate) string {
	if g.Step == "" {
		return "(plan)"
	}
	return g.Step
}

func (a *app) gateShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show RUN [STEP]",
		Short: "Show a gate: the command with its risky parts marked, the verdict, the approvers",
		Long: `Show the open gate of STEP of run RUN (without STEP: the run's plan gate):
the command as it would run, its risky flags and arguments marked (bold
reverse video on a terminal, [brackets] otherwise), the policy's verdict
(action, level, rule, why) and each risky part with the rule that raised
it; for a file edit, the file and the diff or content; for a tool step,
the definition the gate was judged with (the answer binds its hash), and
a definition executors report now beside the approved one; the approvals
it needs and who has given one; the policy version judged with, and the
subject an answer is bound to.

-o json prints the gate object.`,
		Example: `  agentctl gate show 0190a3c2 deploy
  agentctl gate show 0190a3c2 deploy -o json | jq .verdict.highlights`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := findGate(cmd.Context(), c, argv[0], stepArg(argv))
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(g)
			}
			a.printGate(a.env.Stdout, g, time.Now())
			return nil
		},
	}
}

func stepArg(argv []string) string {
	if len(argv) > 1 {
		return argv[1]
	}
	return ""
}

// printGate prints a gate for people.
func (a *app) printGate(w io.Writer, g *api.Gate, now time.Time) {
	term := isTerminal(w) && a.env.Getenv("NO_COLOR") == ""
	line := func(k, format string, args ...any) { fmt.Fprintf(w, "%-12s%s\n", k, fmt.Sprintf(format, args...)) }
	goal := ""
	if g.Goal != "" {
		goal = " (" + g.Goal + ")"
	}
	line("run", "%s%s", g.Run, goal)
	switch {
	case g.Step == "":
		line("plan", "revision %d", g.Revision)
	case g.Attempt > 0:
		line("step", "%s (attempt %d)", g.Step, g.Attempt)
	default:
		line("step", "%s", g.Step)
	}
	line("kind", "%s", g.Kind)
	var hs []event.Highlight
	if g.Verdict != nil {
		hs = g.Verdict.Highlights
	}
	if s := g.Spec; s != nil {
		switch s.Kind {
		case event.KindFileWrite, event.KindFilePatch:
			line("file", "%s (%s)", s.Path, s.Kind)
		case event.KindTool:
			line("tool", "%s", s.Tool)
			line("args", "%s", compactJSON(s.Args))
		default:
			if s.Run != "" {
				// Escaped run by run and styled: past the writer's escaping.
				_ = writeStyled(w, fmt.Sprintf("%-12s%s\n", "command", markRisky(s.Run, hs, term)))
			}
		}
		if s.Cwd != "" {
			line("cwd", "%s", s.Cwd)
		}
		if len(s.Env) > 0 {
			names := make([]string, 0, len(s.Env))
			for k := range s.Env {
				names = append(names, k)
			}
			sort.Strings(names)
			line("env", "%s", strings.Join(names, " "))
		}
		if s.RunAs != "" {
			line("run as", "%s", s.RunAs)
		}
		if s.Compensate != "" {
			line("compensate", "%s", s.Compensate)
		}
	}
	if v := g.Verdict; v != nil {
		line("verdict", "%s (level %s)", v.Action, v.Level)
		line("rule", "%s", dash(v.Rule))
		line("why", "%s", v.Why)
		if !v.Reversible {
			line("reversible", "no")
		}
	} else if g.Reason != "" {
		line("why", "%s", g.Reason)
	}
	who := ""
	if g.NotSubmitter && g.Submitter != "" {
		who = ", not the submitter " + g.Submitter
	} else if g.NotSubmitter {
		who = ", not the submitter"
	}
	line("approvals", "%d of %d%s", len(g.Approvers), g.Approvals, who)
	if len(g.Approvers) > 0 {
		line("approved by", "%s", strings.Join(g.Approvers, ", "))
	}
	if !g.Policy.IsZero() {
		line("policy", "version %d %s", g.Policy.Version, g.Policy.Hash)
	}
	line("subject", "%s", g.Subject)
	line("opened", "%s (%s ago)", fmtTime(g.Opened), fmtDuration(now.Sub(g.Opened)))
	if !g.Expires.IsZero() {
		line("expires", "%s, then %s", fmtTime(g.Expires), dash(string(g.OnExpiry)))
	}
	if len(hs) > 0 {
		fmt.Fprintln(w, "risky parts")
		t := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, h := range hs {
			fmt.Fprintf(t, "  %s\t%s\t%s\n", h.Text, dash(h.Rule), h.Why)
		}
		_ = t.Flush()
	}
	if s := g.Spec; s != nil {
		switch {
		case s.Kind == event.KindFilePatch && s.Patch != "":
			fmt.Fprintln(w, "diff")
			fmt.Fprint(w, withNewline(s.Patch))
		case s.Kind == event.KindFileWrite:
			fmt.Fprintln(w, "content")
			fmt.Fprint(w, withNewline(s.Content))
		case s.Kind == event.KindTool:
			a.printGateTool(w, s.Tool, g.ToolHash)
		}
	}
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// markRisky marks the highlighted bytes of cmd: bold reverse video on a
// terminal, [brackets] otherwise. A highlight whose place is not in cmd,
// or does not hold its text there (it was judged on another text), is
// not marked.
func markRisky(cmd string, hs []event.Highlight, term bool) string {
	m := make([]bool, len(cmd))
	for _, h := range hs {
		if h.Start < 0 || h.End > len(cmd) || h.Start >= h.End || (h.Text != "" && cmd[h.Start:h.End] != h.Text) {
			continue
		}
		for i := h.Start; i < h.End; i++ {
			m[i] = true
		}
	}
	open, closing := "[", "]"
	if term {
		open, closing = "\x1b[1;7m", "\x1b[0m"
	}
	return markSpans(cmd, m, open, closing)
}

// markSpans is text with each run of marked bytes between open and
// closing, the text escaped (escapeText) run by run so that no control
// byte of it can undo the marks.
func markSpans(text string, marked []bool, open, closing string) string {
	var b strings.Builder
	start := 0
	for i := 1; i <= len(text); i++ {
		if i < len(text) && marked[i] == marked[start] {
			continue
		}
		if marked[start] {
			b.WriteString(open + escapeText(text[start:i]) + closing)
		} else {
			b.WriteString(escapeText(text[start:i]))
		}
		start = i
	}
	return b.String()
}

// gateResult is what the answering commands print with -o json.
type gateResult struct {
	Run      string           `json:"run"`
	Step     string           `json:"step,omitempty"`
	Action   event.GateAction `json:"action"`
	Subject  string           `json:"subject"`
	Event    string           `json:"event"`
	Command  string           `json:"command,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Remember bool             `json:"remember,omitempty"`
}

// answer publishes an operator's answer to gate g, after the checks that
// would make the leader ignore it.
func (a *app) answer(ctx context.Context, g *api.Gate, d event.GateDecidedData) error {
	subject, err := boundSubject(g)
	if err != nil {
		return err
	}
	d.Step, d.Subject = g.Step, subject
	a.printBinding(g, subject)
	if d.Action == event.GateAccept {
		id, _, err := a.identity()
		if err != nil {
			return err
		}
		if slices.Contains(g.Approvers, id.ID) {
			return fmt.Errorf("%s already approved %s of run %s: the same approver counts once (nothing was published)", id.ID, gateName(g), g.Run)
		}
		if g.NotSubmitter && g.Submitter == id.ID {
			return fmt.Errorf("%s submitted run %s, and this gate needs approvers other than the submitter (nothing was published)", id.ID, g.Run)
		}
	}
	dr, err := event.NewDraft(event.GateDecided, g.Run, d)
	if err != nil {
		return err
	}
	beforeAnswer(g)
	if err := a.publish(ctx, dr); err != nil {
		return fmt.Errorf("%s %s of run %s: %w", d.Action, gateName(g), g.Run, err)
	}
	if len(a.accepted) > 0 {
		w, seen, err := a.decidedBefore(ctx, g, a.accepted[0])
		switch {
		case w != nil:
			return lostError(g, d.Action, w)
		case err != nil:
			a.note("whether another answer to %s of run %s came first is unknown: %v", gateName(g), g.Run, err)
		case !seen:
			a.note("whether another answer to %s of run %s came first is unknown: no ledger node's audit held the answer within %s", gateName(g), g.Run, a.timeout)
		}
	}
	if a.output != formatText {
		return a.writeJSON(gateResult{Run: g.Run, Step: g.Step, Action: d.Action, Subject: d.Subject, Event: dr.ID, Command: d.Command, Reason: d.Reason, Remember: d.Remember})
	}
	fmt.Fprintf(a.env.Stdout, "%s of %s of run %s recorded (event %s)\n", d.Action, gateName(g), g.Run, dr.ID)
	return nil
}

// boundSubject is the subject an answer to g names. For a step gate it is
// the hash agentctl computes itself (event.GateSubject) from the step and
// the policy version it verified and showed — never a hash it was handed:
// a gate whose listed subject is another is refused. A plan gate's
// subject covers every step of the revision, which the gate does not
// list: it is the one of the signed answer.
func boundSubject(g *api.Gate) (string, error) {
	if g.Spec == nil || g.Step == "" {
		return g.Subject, nil
	}
	subject := event.ToolGateSubject(*g.Spec, g.Policy, g.ToolHash)
	if g.Subject != subject {
		return "", api.WithHint(fmt.Errorf("%s of run %s: the gate's subject %s is not the hash of the step it shows (%s): nothing was published",
			gateName(g), g.Run, g.Subject, subject),
			"the node that answered lists a gate whose content and subject disagree: report it, and ask another node (agentctl gate show RUN STEP)")
	}
	return subject, nil
}

// printBinding says, before the answer is sent, exactly what it binds to:
// to stderr with -o json, so that stdout stays one JSON document.
func (a *app) printBinding(g *api.Gate, subject string) {
	w := a.env.Stdout
	if a.output != formatText {
		w = a.env.Stderr
	}
	fmt.Fprintf(w, "binding the answer to %s of run %s:\n", gateName(g), g.Run)
	if s := g.Spec; s != nil && g.Step != "" {
		switch s.Kind {
		case event.KindFileWrite, event.KindFilePatch:
			fmt.Fprintf(w, "  %s %s\n", s.Kind, s.Path)
		default:
			fmt.Fprintf(w, "  command  %s\n", s.Run)
		}
		if s.Cwd != "" {
			fmt.Fprintf(w, "  cwd      %s\n", s.Cwd)
		}
		if s.RunAs != "" {
			fmt.Fprintf(w, "  user     %s\n", s.RunAs)
		}
	}
	if !g.Policy.IsZero() {
		fmt.Fprintf(w, "  policy   version %d %s\n", g.Policy.Version, g.Policy.Hash)
	}
	fmt.Fprintf(w, "  subject  %s\n", subject)
}

// beforeAnswer runs between reading gate g and publishing an answer to
// it: nothing, except in tests, where another operator answers then.
var beforeAnswer = func(*api.Gate) {}

// gateName names the gated step, or the plan gate.
func gateName(g *api.Gate) string {
	if g.Step == "" {
		return "the plan gate"
	}
	return "step " + g.Step
}

func (a *app) gateApproveCmd() *cobra.Command {
	var remember bool
	var reason string
	c := &cobra.Command{
		Use:   "approve RUN [STEP] [--remember]",
		Short: "Accept a gated step exactly as shown",
		Long: `Publish a gate.decided event (accept), bound to the gate's subject: the
step runs once the gate has the approvals it needs (distinct operators; not
the run's submitter when the policy says so), exactly as 'gate show'
showed it. For a needs-decision gate, accept runs the step again.

--remember also asks the leader to add the narrowest allow rule that would
have allowed this exact command to the policy, recorded as a new policy
version (source remember; agentctl policy history). It is refused, and
nothing published, where no rule can name the command exactly (a run-time
variable, a glob, more than one command) or the gate is not a policy gate
of a shell command.`,
		Example: `  agentctl gate approve 0190a3c2 deploy
  agentctl gate approve 0190a3c2 cleanup --remember`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := findGate(cmd.Context(), c, argv[0], stepArg(argv))
			if err != nil {
				return err
			}
			if remember {
				if err := a.checkRemember(cmd.Context(), c, g); err != nil {
					return err
				}
			}
			return a.answer(cmd.Context(), g, event.GateDecidedData{Action: event.GateAccept, Remember: remember, Reason: reason})
		},
	}
	c.Flags().BoolVar(&remember, "remember", false, "add the narrowest allow rule for this exact command to the policy (recorded)")
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

func (a *app) gateEditCmd() *cobra.Command {
	var command, reason string
	c := &cobra.Command{
		Use:   "edit RUN STEP --command TEXT",
		Short: "Replace a gated step's command; the new one is judged again",
		Long: `Show the change from the gated command to the new one, then publish a
gate.decided event (edit) with the new command. The leader records both,
judges the new command with the policy, and runs it if the policy allows
it, or holds it at a new gate. The verdict shown here is the policy's
(the version the gate was judged with), for information.`,
		Example: `  agentctl gate edit 0190a3c2 cleanup --command 'rm ./build/app'`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(command) == "" {
				return usagef("gate edit: --command is required (the step's new command)")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := findGate(cmd.Context(), c, argv[0], argv[1])
			if err != nil {
				return err
			}
			if err := a.showEdit(cmd.Context(), c, g, command); err != nil {
				return err
			}
			return a.answer(cmd.Context(), g, event.GateDecidedData{Action: event.GateEdit, Command: command, Reason: reason})
		},
	}
	c.Flags().StringVar(&command, "command", "", "the new command (required)")
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

// checkRemember refuses --remember where the leader would record no
// rule and say nothing: a gate that is not a policy gate of a shell
// command, or a command no allow rule can name exactly (a run-time
// variable, a glob, more than one command), judged with the policy
// version the gate was judged with. When that version cannot be read the
// leader decides, and a note says so.
func (a *app) checkRemember(ctx context.Context, c *api.Client, g *api.Gate) error {
	if g.Step == "" || g.Kind != event.GatePolicy || g.Spec == nil || g.Spec.Kind != event.KindShell {
		return fmt.Errorf("--remember applies to a policy gate of a shell command, and %s of run %s is not one: approve it without --remember (nothing was published)", gateName(g), g.Run)
	}
	v, err := policyShow(ctx, c, g.Policy.Version)
	if err != nil {
		a.note("cannot check that --remember can record a rule (policy version %d: %v): the leader records one only if a rule can name the command exactly", g.Policy.Version, err)
		return nil
	}
	_, err = policy.Remember([]byte(v.Text), g.Spec.Run, g.Spec.Cwd, "remembered", "check")
	if errors.Is(err, policy.ErrNotRememberable) {
		return api.WithHint(fmt.Errorf("--remember: no allow rule can name exactly %q, so the leader would record none: %w (nothing was published)", g.Spec.Run, err),
			"approve without --remember to run it this once, or write a rule yourself: agentctl policy apply")
	}
	if err != nil {
		a.note("cannot check that --remember can record a rule: %v", err)
	}
	return nil
}

// showEdit checks that g holds a shell command that command changes, and
// prints the change (to stderr with -o json) and the policy's verdict on
// the new command.
func (a *app) showEdit(ctx context.Context, c *api.Client, g *api.Gate, command string) error {
	if g.Spec == nil || g.Spec.Kind == event.KindFileWrite || g.Spec.Kind == event.KindFilePatch || g.Step == "" {
		return fmt.Errorf("%s of run %s is not a shell command: gate edit replaces one; approve, skip or deny it (nothing was published)", gateName(g), g.Run)
	}
	if command == g.Spec.Run {
		return fmt.Errorf("the new command is the gated one: approve it with agentctl gate approve %s %s (nothing was published)", g.Run, g.Step)
	}
	w := a.env.Stdout
	if a.output != formatText {
		w = a.env.Stderr
	}
	fmt.Fprint(w, lineDiff(g.Spec.Run, command))
	if note := a.judgeEdit(ctx, c, g, command); note != "" {
		fmt.Fprintln(w, note)
	}
	return nil
}

// judgeEdit is the verdict of the policy version the gate was judged with
// on the new command, as a line for people ("" when it cannot be read).
func (a *app) judgeEdit(ctx context.Context, c *api.Client, g *api.Gate, command string) string {
	v, err := policyShow(ctx, c, g.Policy.Version)
	if err != nil {
		return "the new command will be judged by the leader (the policy cannot be read here: " + err.Error() + ")"
	}
	p, err := policy.Parse([]byte(v.Text), fmt.Sprintf("policy version %d", v.Version))
	if err != nil {
		return "the new command will be judged by the leader (policy version " + fmt.Sprint(v.Version) + " does not load here: " + err.Error() + ")"
	}
	vd := p.WithVersion(v.Version).JudgeIn(command, g.Spec.Cwd)
	next := "it runs once the edit is folded"
	switch vd.Action {
	case policy.Confirm:
		next = "it waits at a new gate"
	case policy.Deny:
		next = "it is refused"
	}
	return fmt.Sprintf("policy version %d judges the new command: %s (level %s, rule %s): %s — %s", v.Version, vd.Action, vd.Level, vd.Rule, vd.Why, next)
}

// lineDiff shows old → new line by line: the lines both share at the start
// and the end once, the others as - and +.
func lineDiff(old, new string) string {
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	pre := 0
	for pre < len(o) && pre < len(n) && o[pre] == n[pre] {
		pre++
	}
	suf := 0
	for suf < len(o)-pre && suf < len(n)-pre && o[len(o)-1-suf] == n[len(n)-1-suf] {
		suf++
	}
	var b strings.Builder
	b.WriteString("--- gated command\n+++ new command\n")
	for _, l := range o[:pre] {
		b.WriteString("  " + l + "\n")
	}
	for _, l := range o[pre : len(o)-suf] {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range n[pre : len(n)-suf] {
		b.WriteString("+ " + l + "\n")
	}
	for _, l := range o[len(o)-suf:] {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func (a *app) gateAnswerCmd(action event.GateAction, short, long string) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:     string(action) + " RUN [STEP] --reason TEXT",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  agentctl gate %s 0190a3c2 deploy --reason 'not during the freeze'", action),
		Args:    args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("gate %s: --reason is required (it is recorded in the ledger)", action)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := findGate(cmd.Context(), c, argv[0], stepArg(argv))
			if err != nil {
				return err
			}
			if g.Step == "" && action != event.GateDeny {
				return fmt.Errorf("a plan gate is approved or denied, not %s: the leader ignores any other answer to run %s's plan gate (nothing was published)", action, g.Run)
			}
			return a.answer(cmd.Context(), g, event.GateDecidedData{Action: action, Reason: reason})
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger (required)")
	return c
}

// stdinTerminal reports whether r is a terminal; tests replace it.
var stdinTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
