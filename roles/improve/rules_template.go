package improve

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// PatternReplanTemplate: replans of a family kept fixing the same
// failing command shape, and a run of the family whose replanned plan
// then succeeded shows the plan that works: it is proposed as the
// family's template.
const PatternReplanTemplate = "replan_template"

// maxReplanned bounds the runs Replanned keeps.
const maxReplanned = 10_000

// FixedPlan is a run's replanned plan (a revision after the first) that
// the run then succeeded with.
type FixedPlan struct {
	Run      string
	Family   string
	Revision int
	Plan     event.Plan
	// Proposed and Finished are the ledger positions of its plan.proposed
	// and of the run's run.finished.
	Proposed, Finished uint64
	Time               time.Time
}

// Replanned is the window of replanned plans the template rule reads:
// per run, the newest plan revision after the first, and the runs that
// succeeded with one (FixedPlan). It folds events in ledger order and
// is bounded like the telemetry (Trim, maxReplanned).
type Replanned struct {
	// Fixed are the runs that succeeded with a replanned plan, by run.
	Fixed  map[string]FixedPlan
	open   map[string]FixedPlan
	family map[string]string
}

// NewReplanned returns an empty window.
func NewReplanned() *Replanned {
	return &Replanned{Fixed: map[string]FixedPlan{}, open: map[string]FixedPlan{}, family: map[string]string{}}
}

// Fold folds one ledger event.
func (r *Replanned) Fold(ev event.Event) {
	switch ev.Type {
	case event.GoalSubmitted:
		// The family alone: a goal's plan file is not decoded.
		var d struct {
			Family string `json:"family"`
		}
		if ev.Decode(&d) == nil && d.Family != "" && len(r.family) < maxReplanned {
			r.family[ev.Run] = d.Family
		}
	case event.PlanProposed:
		var head struct {
			Revision int `json:"revision"`
			Plan     struct {
				Family string `json:"family"`
			} `json:"plan"`
		}
		if ev.Decode(&head) != nil {
			return
		}
		fam := head.Plan.Family
		if fam == "" {
			fam = r.family[ev.Run]
		}
		if head.Revision == 1 && fam != "" && len(r.family) < maxReplanned {
			r.family[ev.Run] = fam
		}
		// The first proposal of a revision is the one the orchestrator
		// takes; a later one of the same revision is ignored. Only a
		// replanned revision's plan is decoded whole.
		if head.Revision < 2 || fam == "" || r.open[ev.Run].Revision >= head.Revision || len(r.open) >= maxReplanned {
			return
		}
		var d event.PlanProposedData
		if ev.Decode(&d) != nil {
			return
		}
		r.open[ev.Run] = FixedPlan{Run: ev.Run, Family: fam, Revision: d.Revision, Plan: d.Plan, Proposed: ev.Seq, Time: ev.Time}
	case event.RunFinished:
		var d event.RunFinishedData
		if f, ok := r.open[ev.Run]; ok && ev.Decode(&d) == nil && d.Status == event.RunSucceeded {
			f.Finished, f.Time = ev.Seq, ev.Time
			if len(r.Fixed) < maxReplanned {
				r.Fixed[ev.Run] = f
			}
		}
		delete(r.open, ev.Run)
		delete(r.family, ev.Run)
	}
}

// foldReplanned folds ev into t's replanned plans.
func (t *Telemetry) foldReplanned(ev event.Event) {
	switch ev.Type {
	case event.GoalSubmitted, event.PlanProposed, event.RunFinished:
		if t.Fixed == nil {
			t.Fixed = NewReplanned()
		}
		t.Fixed.Fold(ev)
	}
}

// Trim drops what is older than window before now (nothing on nil).
func (r *Replanned) Trim(now time.Time, window time.Duration) {
	if r == nil {
		return
	}
	cut := now.Add(-window)
	for run, f := range r.Fixed {
		if f.Time.Before(cut) {
			delete(r.Fixed, run)
		}
	}
	for run, f := range r.open {
		if f.Time.Before(cut) {
			delete(r.open, run)
		}
	}
	if len(r.family) >= maxReplanned {
		r.family = map[string]string{}
	}
}

// EvaluateTemplates is the template rule (PatternReplanTemplate; Evaluate
// runs it with the others, on the window's replanned plans, t.Fixed): for a
// family whose replans fixed the same failing command shape at least
// Rules.MinReplans times (the replans rule's finding), the newest of
// those runs that succeeded with its replanned plan gives the family's
// template proposal — that plan as a plan file (JSON), when the plan
// decoder and the forbidden-change checks accept it as a template of
// the family and it is not the template in force already. Its rollback
// restores the template in force (or none). Like Evaluate, it leaves out
// findings the state already holds a proposal for.
func EvaluateTemplates(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	r := t.Fixed
	if r == nil {
		return nil
	}
	type agg struct {
		seqs []uint64
		runs []string
	}
	by := map[key]*agg{}
	for i := range t.Replans {
		rp := &t.Replans[i]
		subject := strings.Join(rp.Shapes, "; ")
		if subject == "" {
			subject = "step " + rp.Step
		}
		k := key{rp.Family, subject}
		if k.family == "" {
			continue
		}
		g := by[k]
		if g == nil {
			g = &agg{}
			by[k] = g
		}
		g.seqs = append(g.seqs, rp.Seq)
		g.runs = append(g.runs, rp.Run)
	}
	var out []event.ProposalCreatedData
	for _, k := range sortedKeys(by) {
		g := by[k]
		if len(g.seqs) < rules.MinReplans {
			continue
		}
		var best *FixedPlan
		for _, run := range g.runs {
			if f, ok := r.Fixed[run]; ok && f.Family == k.family && (best == nil || f.Finished > best.Finished) {
				best = &f
			}
		}
		if best == nil {
			continue
		}
		if p, ok := templateProposal(rules, t, k, g.seqs, best, in); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b event.ProposalCreatedData) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// templateProposal is the proposal making f's plan the template of k's
// family, or false when it cannot be one.
func templateProposal(rules Rules, t *Telemetry, k key, replans []uint64, f *FixedPlan, in Input) (event.ProposalCreatedData, bool) {
	pl := f.Plan
	pl.Family = k.family
	b, err := json.MarshalIndent(pl, "", "  ")
	if err != nil {
		return event.ProposalCreatedData{}, false
	}
	text := string(b) + "\n"
	change := event.Change{Kind: event.ChangeTemplate, Setting: event.SettingTemplate,
		Template: &event.TemplateChange{Family: k.family, Plan: text, Hash: tuning.TemplateHash(text)}}
	st := in.State
	if st == nil {
		st = NewState()
	}
	if cur, ok := st.Template(k.family); ok && cur.Hash == change.Template.Hash {
		return event.ProposalCreatedData{}, false
	}
	p := event.ProposalCreatedData{Pattern: PatternReplanTemplate, Subject: k.subject, Family: k.family, Risk: "medium",
		Change: change, Rollback: st.TemplateChangeOf(k.family), Validation: TemplateValidation(change),
		Evidence: append(slices.Clone(replans), f.Proposed, f.Finished),
		RootCause: fmt.Sprintf("%d replans of %s fixed the same failing `%s`; run %s succeeded with its replanned plan (revision %d)",
			len(replans), k.family, k.subject, f.Run, f.Revision),
		ExpectedEffect: fmt.Sprintf("goals of %s submitted with neither a plan file nor text (agentctl goal submit --family %s) run the plan that worked",
			k.family, k.family),
		Baseline: familyRate(t, k.family, nil)}
	slices.Sort(p.Evidence)
	if Forbidden(p.Change) != nil || Forbidden(p.Rollback) != nil {
		return event.ProposalCreatedData{}, false
	}
	p.ID = ProposalID(p.Pattern, p.Family, p.Subject, p.Change)
	if st.Proposals[p.ID] != nil {
		return event.ProposalCreatedData{}, false
	}
	if len(p.Evidence) > rules.MaxEvidence {
		p.Evidence = p.Evidence[len(p.Evidence)-rules.MaxEvidence:]
	}
	p.Approvers = approversFor(in.Policy, p.Risk)
	return p, true
}
