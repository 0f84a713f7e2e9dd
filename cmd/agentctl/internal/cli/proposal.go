package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/spf13/cobra"
)

func (a *app) proposalCmd() *cobra.Command {
	return group("proposal", "List, show, approve and reject the improvement loop's proposals",
		`The leader orchestrator evaluates the ledger with fixed rules and proposes
changes with their evidence: a planner note, a family's step defaults, a
policy rule (docs/improve.md). Nothing changes until operators approve a
proposal (as many as the policy's approvals for its risk); the leader
then applies it, watches the error rate of what it touched and keeps it
(implemented) or reverts it on its own. A change to files of a repository
is applied by the git run an operator submits (proposal apply), whose
pull request a person merges.`,
		a.proposalLsCmd(), a.proposalShowCmd(), a.proposalDecideCmd(true), a.proposalDecideCmd(false), a.proposalApplyCmd())
}

func (a *app) proposalLsCmd() *cobra.Command {
	var status string
	c := &cobra.Command{
		Use:   "ls [--status STATUS]",
		Short: "List the proposals, newest first",
		Long: `List the proposals, newest first: id, status, pattern, risk, what it
changes and its subject. --status keeps one status (pending, approved,
rejected, applied, implemented, reverted, refused). -o json prints the
proposal objects without policy texts (proposal show prints those).`,
		Example: `  agentctl proposal ls --status pending
  agentctl proposal ls -o json | jq -r '.[] | .id + " " + .status'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var ps []tuning.Proposal
			if err := c.Call(cmd.Context(), api.MethodProposalsList, api.ProposalsRequest{Status: status}, &ps); err != nil {
				return err
			}
			if a.output != formatText {
				return writeList(a, ps)
			}
			if len(ps) == 0 {
				_, err := fmt.Fprintln(a.env.Stdout, "no proposals (the leader evaluates every hour; agentctl improve eval --now asks it at once)")
				return err
			}
			tw := a.table()
			fmt.Fprintln(tw, "PROPOSAL\tSTATUS\tPATTERN\tRISK\tCHANGE\tSUBJECT")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Status, p.Pattern, p.Risk, changeCell(p.Change), truncate(p.Subject, 50))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&status, "status", "", "only proposals of this status")
	return c
}

// changeCell names what a change touches, briefly.
func changeCell(c event.Change) string {
	switch c.Kind {
	case event.ChangeNotes:
		if c.Note != nil {
			return "note " + c.Note.Op
		}
	case event.ChangeStepDefaults:
		if d := c.Defaults; d != nil {
			if c.Setting == event.SettingDefaultsTimeout {
				if d.Timeout == 0 {
					return "timeout none (" + dash(d.Family) + ")"
				}
				return fmt.Sprintf("timeout %s (%s)", d.Timeout, dash(d.Family))
			}
			if d.Retries != nil {
				return fmt.Sprintf("retries %d (%s)", *d.Retries, dash(d.Family))
			}
			return "retries none (" + dash(d.Family) + ")"
		}
	case event.ChangePolicy:
		return "policy rule"
	case event.ChangeTemplate:
		if tc := c.Template; tc != nil {
			if tc.Hash == "" {
				return "template none (" + tc.Family + ")"
			}
			return fmt.Sprintf("template %.12s (%s)", tc.Hash, tc.Family)
		}
	case event.ChangeRepository:
		if rc := c.Repository; rc != nil {
			return fmt.Sprintf("repository %d file(s)", len(rc.Files))
		}
	}
	return string(c.Kind)
}

func (a *app) proposalShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a proposal: its change, evidence, validation and every lifecycle state",
		Long: `Show one proposal: the pattern that found it, the change and its rollback,
root cause, risk, expected effect, the evidence (ledger positions: read
them with agentctl audit), how it was validated — step defaults by
replaying the recorded attempts, a policy by re-judging the recorded
commands, notes and templates by the forbidden-change checks only (a
replay reads the recorded model answers, so it proves nothing there) —,
the baseline error rate and every state it went through, with who and
when.`,
		Example: `  agentctl proposal show p-3f9a1c22b07e
  agentctl proposal show p-3f9a1c22b07e -o json | jq .history`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var p tuning.Proposal
			if err := c.Call(cmd.Context(), api.MethodProposalsShow, api.ProposalRequest{ID: argv[0]}, &p); err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(p)
			}
			renderProposal(a.env.Stdout, &p)
			return nil
		},
	}
}

// renderProposal prints a proposal for people.
func renderProposal(w io.Writer, p *tuning.Proposal) {
	fmt.Fprintf(w, "proposal   %s\n", p.ID)
	fmt.Fprintf(w, "status     %s\n", p.Status)
	fmt.Fprintf(w, "pattern    %s\n", p.Pattern)
	fmt.Fprintf(w, "subject    %s\n", p.Subject)
	if p.Family != "" {
		fmt.Fprintf(w, "family     %s\n", p.Family)
	}
	fmt.Fprintf(w, "risk       %s (%d approver(s) needed", p.Risk, max(1, p.Approvers))
	if len(p.ApprovedBy) > 0 {
		fmt.Fprintf(w, "; approved by %s", strings.Join(p.ApprovedBy, ", "))
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "change     %s\n", describeChange(p.Change))
	fmt.Fprintf(w, "rollback   %s\n", describeChange(p.Rollback))
	fmt.Fprintf(w, "root cause %s\n", p.RootCause)
	fmt.Fprintf(w, "expected   %s\n", p.ExpectedEffect)
	if p.RiskNote != "" {
		fmt.Fprintf(w, "risk note  %s\n", p.RiskNote)
	}
	if p.DraftedBy != "" {
		fmt.Fprintf(w, "drafted by %s (text), %s (change)\n", p.DraftedBy, cmp.Or(p.ChangeBy, event.DraftedByRules))
		if p.DraftNote != "" {
			fmt.Fprintf(w, "draft note %s\n", p.DraftNote)
		}
	}
	fmt.Fprintf(w, "baseline   %s\n", rateText(p.Baseline))
	fmt.Fprintf(w, "evidence   %d event(s): %s\n", len(p.Evidence), seqList(p.Evidence))
	fmt.Fprintf(w, "validated  %s: %s\n", p.Validation.Method, p.Validation.Summary)
	if p.ApplyCheck != nil {
		fmt.Fprintf(w, "at apply   %s: %s\n", p.ApplyCheck.Method, p.ApplyCheck.Summary)
	}
	if p.Run != "" {
		fmt.Fprintf(w, "git run    %s\n", p.Run)
	}
	if p.PullRequest != "" {
		fmt.Fprintf(w, "pull req.  %s\n", p.PullRequest)
	}
	if p.RunFailed != "" {
		fmt.Fprintf(w, "run ended  %s\n", p.RunFailed)
	}
	if o := p.Outcome; o != nil {
		fmt.Fprintf(w, "outcome    after %s against %s (threshold +%.0f%%)\n", rateText(o.After), rateText(o.Baseline), o.Threshold*100)
	}
	fmt.Fprintln(w, "history")
	for _, h := range p.History {
		line := fmt.Sprintf("  %-11s %s by %s (ledger %d)", h.Status, fmtTime(h.At), dash(h.By), h.Seq)
		if h.Note != "" {
			line += ": " + h.Note
		}
		fmt.Fprintln(w, line)
	}
	if p.Change.Kind == event.ChangePolicy && p.Change.Policy != nil && p.Change.Policy.Text != "" {
		fmt.Fprintf(w, "proposed policy (after version %d):\n%s", p.Change.Policy.Base, indent(p.Change.Policy.Text))
	}
	if tc := p.Change.Template; p.Change.Kind == event.ChangeTemplate && tc != nil && tc.Plan != "" {
		fmt.Fprintf(w, "proposed template of family %s:\n%s", tc.Family, indent(tc.Plan))
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// describeChange says what a change does, for people.
func describeChange(c event.Change) string {
	switch c.Kind {
	case event.ChangeNotes:
		if n := c.Note; n != nil {
			s := fmt.Sprintf("%s: %s note %s", c.Setting, n.Op, n.ID)
			if n.Family != "" {
				s += " (family " + n.Family + ")"
			}
			if n.Text != "" {
				s += ": " + n.Text
			}
			return s
		}
	case event.ChangeStepDefaults:
		return c.Setting + " " + changeCell(c)
	case event.ChangePolicy:
		if pc := c.Policy; pc != nil {
			if pc.Command != "" {
				return fmt.Sprintf("policy after version %d: allow exactly %q (the rule gate approve --remember writes)", pc.Base, pc.Command)
			}
			return fmt.Sprintf("policy after version %d (%s)", pc.Base, pc.Hash)
		}
	case event.ChangeTemplate:
		if tc := c.Template; tc != nil {
			if tc.Hash == "" {
				return fmt.Sprintf("%s: family %s has no template", c.Setting, tc.Family)
			}
			return fmt.Sprintf("%s: the template of family %s is the plan of sha256 %s", c.Setting, tc.Family, tc.Hash)
		}
	case event.ChangeRepository:
		if rc := c.Repository; rc != nil {
			if len(rc.Files) == 0 {
				return "repository: nothing (the pull request is the forge's to close)"
			}
			var paths []string
			for _, f := range rc.Files {
				paths = append(paths, f.Path)
			}
			return fmt.Sprintf("repository %s%s (base %s, pushed to %s, a pull request for a person to merge): write %s",
				rc.Git.Repo, rc.Git.URL, rc.Git.Base, rc.Git.Push, strings.Join(paths, ", "))
		}
	}
	return fmt.Sprintf("%s %s", c.Kind, c.Setting)
}

func rateText(r event.Rate) string {
	if r.Total == 0 {
		return "no samples"
	}
	return fmt.Sprintf("%.0f%% errors (%d of %d)", 100*float64(r.Errors)/float64(r.Total), r.Errors, r.Total)
}

func seqList(seqs []uint64) string {
	var parts []string
	for i, s := range seqs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(seqs)-10))
			break
		}
		parts = append(parts, fmt.Sprint(s))
	}
	return dash(strings.Join(parts, ", "))
}

// proposalResult is what proposal approve and reject print with -o json.
type proposalResult struct {
	Proposal string `json:"proposal"`
	Action   string `json:"action"`
	Event    string `json:"event"`
	Reason   string `json:"reason,omitempty"`
}

func (a *app) proposalDecideCmd(approve bool) *cobra.Command {
	var reason string
	verb, typ := "reject", event.ProposalRejected
	short := "Reject a pending proposal: it is never applied"
	if approve {
		verb, typ = "approve", event.ProposalApproved
		short = "Approve a pending proposal: the leader applies it once enough operators did"
	}
	c := &cobra.Command{
		Use:   verb + " ID [--reason TEXT]",
		Short: short,
		Long: short + `.
Publishes proposal.` + verb + `d, signed with your operator credentials, for a
proposal that is pending. An approval counts once per operator; the
proposal is approved when as many distinct operators as it names did
(the policy's approvals for its risk).`,
		Example: "  agentctl proposal " + verb + ` p-3f9a1c22b07e --reason "the mirror is slow at night"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.proposalDecide(cmd.Context(), typ, verb, argv[0], reason)
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the ledger")
	return c
}

func (a *app) proposalDecide(ctx context.Context, typ event.Type, verb, id, reason string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	var p tuning.Proposal
	if err := c.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: id}, &p); err != nil {
		return fmt.Errorf("proposal %s %s (nothing was published): %w", verb, id, err)
	}
	if p.Status != tuning.StatusPending {
		return api.WithHint(fmt.Errorf("proposal %s is %s, not pending: nothing was published", p.ID, p.Status),
			"agentctl proposal show "+p.ID+" shows its history")
	}
	d, err := event.NewDraft(typ, "", event.ProposalDecidedData{Proposal: p.ID, Reason: reason})
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("proposal %s %s: %w", verb, p.ID, err)
	}
	if a.output != formatText {
		return a.writeJSON(proposalResult{Proposal: p.ID, Action: verb, Event: d.ID, Reason: reason})
	}
	fmt.Fprintf(a.env.Stdout, "%sd proposal %s (event %s)\n", verb, p.ID, d.ID)
	return nil
}

func (a *app) improveCmd() *cobra.Command {
	return group("improve", "Run the improvement loop's evaluation and show the settings it changes",
		`The leader orchestrator evaluates the ledger on a schedule (every hour by
default) and proposes changes (agentctl proposal). 'improve eval' asks it
to evaluate now, or sets the interval; 'improve settings' shows the
settings approved proposals changed: planner notes and step defaults.`,
		a.improveEvalCmd(), a.improveSettingsCmd())
}

func (a *app) improveEvalCmd() *cobra.Command {
	var now bool
	var every time.Duration
	c := &cobra.Command{
		Use:   "eval --now | --every DURATION",
		Short: "Ask the leader to evaluate now, or set how often it evaluates",
		Long: `Publish improve.eval, signed with your operator credentials: with --now the
leader evaluates at once (its new proposals appear in agentctl proposal
ls); with --every it evaluates at that interval from now on.`,
		Example: `  agentctl improve eval --now
  agentctl improve eval --every 6h`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !now && every <= 0 {
				return usagef("improve eval: give --now, --every DURATION, or both")
			}
			d, err := event.NewDraft(event.ImproveEval, "", event.ImproveEvalData{Now: now, Every: event.Duration(every)})
			if err != nil {
				return err
			}
			if err := a.publish(cmd.Context(), d); err != nil {
				return fmt.Errorf("improve eval: %w", err)
			}
			if a.output != formatText {
				return a.writeJSON(map[string]any{"event": d.ID, "now": now, "every": event.Duration(every)})
			}
			fmt.Fprintf(a.env.Stdout, "evaluation asked (event %s)\n", d.ID)
			return nil
		},
	}
	c.Flags().BoolVar(&now, "now", false, "evaluate at once")
	c.Flags().DurationVar(&every, "every", 0, "evaluate at this interval from now on")
	return c
}

func (a *app) improveSettingsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "settings",
		Short: "Show the planner notes, step defaults and plan templates approved proposals set",
		Long: `Show the settings the improvement loop changes, as the ledger holds them:
the evaluation's interval, the approved planner notes (with the proposal
that made each), the automatic notes a proposal retired or pinned, and
the step defaults by plan family (what steps that set no timeout or
retries get) and the plan templates by family (what a goal submitted
with --family alone is planned from; -o json has their plan text).`,
		Example: `  agentctl improve settings
  agentctl improve settings -o json | jq .defaults`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var s tuning.State
			if err := c.Call(cmd.Context(), api.MethodImproveSettings, struct{}{}, &s); err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(s)
			}
			w := a.env.Stdout
			every := s.Every.String()
			if s.Every == 0 {
				every = tuning.DefaultEvery.String() + " (default)"
			}
			fmt.Fprintf(w, "evaluation every %s\n", every)
			fmt.Fprintln(w, "approved notes")
			if len(s.Notes) == 0 && len(s.Retired) == 0 {
				fmt.Fprintln(w, "  (none)")
			}
			for _, n := range s.Notes {
				fmt.Fprintf(w, "  %s [%s, proposal %s]: %s\n", n.ID, dash(n.Family), dash(n.Proposal), n.Text)
			}
			for _, id := range slices.Sorted(maps.Keys(s.Retired)) {
				fmt.Fprintf(w, "  %s retired (automatic)\n", id)
			}
			fmt.Fprintln(w, "step defaults")
			if len(s.Defaults) == 0 {
				fmt.Fprintln(w, "  (none: steps keep their own timeout and retries)")
			}
			for _, fam := range slices.Sorted(maps.Keys(s.Defaults)) {
				d := s.Defaults[fam]
				retries := "-"
				if d.Retries != nil {
					retries = fmt.Sprint(*d.Retries)
				}
				fmt.Fprintf(w, "  family %s: timeout %s, retries %s\n", dash(fam), dash(d.Timeout.String()), retries)
			}
			fmt.Fprintln(w, "plan templates")
			if len(s.Templates) == 0 {
				fmt.Fprintln(w, "  (none: agentctl goal submit --family NAME needs one)")
			}
			for _, fam := range slices.Sorted(maps.Keys(s.Templates)) {
				tpl := s.Templates[fam]
				fmt.Fprintf(w, "  family %s: sha256 %.12s [proposal %s] (agentctl goal submit --family %s)\n", fam, tpl.Hash, dash(tpl.Proposal), fam)
			}
			return nil
		},
	}
}

func init() {
	proposalSummary := func(d event.ProposalDecidedData) string { return "proposal " + d.Proposal + reasonSuffix(d.Reason) }
	summarizers[event.ProposalCreated] = with(func(d event.ProposalCreatedData) string {
		return fmt.Sprintf("proposal %s (%s, risk %s): %s", d.ID, d.Pattern, d.Risk, truncate(d.RootCause, 80))
	})
	summarizers[event.ProposalApproved] = with(proposalSummary)
	summarizers[event.ProposalRejected] = with(proposalSummary)
	summarizers[event.ProposalDecidedFor] = with(func(d event.ProposalDecidedForData) string {
		verb := "decided (" + d.Action + ")"
		switch d.Action {
		case event.ProposalApprove:
			verb = "approved"
		case event.ProposalReject:
			verb = "rejected"
		}
		return "proposal " + d.Proposal + " " + verb + " by " + d.Operator + " (through the ui)" + reasonSuffix(d.Reason)
	})
	summarizers[event.ProposalApplied] = with(func(d event.ProposalAppliedData) string {
		return "proposal " + d.Proposal + " applied: " + truncate(d.Validation.Summary, 80)
	})
	outcome := func(d event.ProposalOutcomeData) string {
		return "proposal " + d.Proposal + ": " + truncate(d.Reason, 100)
	}
	summarizers[event.ProposalImplemented] = with(outcome)
	summarizers[event.ProposalReverted] = with(outcome)
	summarizers[event.TuningChanged] = with(func(d event.TuningChangedData) string {
		s := describeChange(d.Change) + " (proposal " + d.Proposal + ")"
		if d.Revert {
			s = "revert: " + s
		}
		return truncate(s, 120)
	})
	summarizers[event.ImproveEval] = with(func(d event.ImproveEvalData) string {
		return fmt.Sprintf("evaluate now %t, every %s", d.Now, dash(d.Every.String()))
	})
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + truncate(r, 80)
}
