package improve

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Patterns the evaluation finds (ProposalCreatedData.Pattern).
const (
	// PatternShapeFailures: a command shape failed (class logic) at least
	// Rules.MinFailures times in one plan family.
	PatternShapeFailures = "shape_failures"
	// PatternTimeouts: one step of a family timed out at least
	// Rules.MinTimeouts times under the default timeout.
	PatternTimeouts = "timeouts"
	// PatternGatesApproved: operators accepted the gate of one command at
	// least Rules.MinApprovals times and never refused it.
	PatternGatesApproved = "gates_approved"
	// PatternReplans: replans kept fixing the same failing command shape
	// in one family.
	PatternReplans = "replans"
	// PatternFeedback: runs of one family were rated down at least
	// Rules.MinRatings times, more often than up.
	PatternFeedback = "feedback"
	// PatternRetries: steps of one family that set no retries failed
	// transiently (class transient, not a timeout; or retryable and
	// passed when run again) at least Rules.MinTransient times while no
	// default retries were in force.
	PatternRetries = "retries"
)

// Rules are the evaluation's thresholds. They are fixed by the build
// (DefaultRules), never by a proposal (Forbidden refuses every setting
// under "improve", "eval" and "monitor").
type Rules struct {
	MinFailures  int
	MinTimeouts  int
	MinApprovals int
	MinReplans   int
	MinRatings   int
	MinTransient int
	// TimeoutFactor multiplies the timeout steps hit for the proposed
	// default.
	TimeoutFactor int
	// MaxEvidence caps the evidence a proposal lists (the newest).
	MaxEvidence int
	// MaxProposedRetries caps the default retries the rule proposes.
	MaxProposedRetries int
}

// DefaultRules are the thresholds in force.
func DefaultRules() Rules {
	return Rules{MinFailures: 3, MinTimeouts: 3, MinApprovals: 3, MinReplans: 3, MinRatings: 3, MinTransient: 3, TimeoutFactor: 4,
		MaxEvidence: 50, MaxProposedRetries: 3}
}

// Input is what one evaluation reads beside the telemetry.
type Input struct {
	// Now is the evaluation's time.
	Now time.Time
	// State is the proposals and settings in force.
	State *State
	// Policy is the policy in force (nil: none, no policy proposals).
	Policy *policy.Policy
	// PolicyText is its text (what a policy proposal adds a rule to).
	PolicyText string
}

// Evaluate runs every rule over the telemetry and returns the proposals
// to create: those whose id the state does not hold yet (a finding that
// was proposed once, whatever became of it, is not proposed again), each
// validated; a finding whose change validation refuses is dropped. The
// result is sorted by id: the same ledger gives the same proposals.
func Evaluate(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	var out []event.ProposalCreatedData
	add := func(p event.ProposalCreatedData, ok bool) {
		if !ok {
			return
		}
		p.ID = ProposalID(p.Pattern, p.Family, p.Subject, p.Change)
		if in.State != nil && in.State.Proposals[p.ID] != nil {
			return
		}
		if len(p.Evidence) > rules.MaxEvidence {
			p.Evidence = p.Evidence[len(p.Evidence)-rules.MaxEvidence:]
		}
		if p.Approvers == 0 {
			p.Approvers = approversFor(in.Policy, p.Risk)
		}
		out = append(out, p)
	}
	for _, p := range shapeFailures(rules, t, in) {
		add(p, true)
	}
	for _, p := range timeouts(rules, t, in) {
		add(p, true)
	}
	for _, p := range gatesApproved(rules, t, in) {
		add(p, true)
	}
	for _, p := range replans(rules, t, in) {
		add(p, true)
	}
	for _, p := range feedback(rules, t, in) {
		add(p, true)
	}
	for _, p := range noteRules(t, in) { // rules_notes.go
		add(p, true)
	}
	for _, p := range retries(rules, t, in) {
		add(p, true)
	}
	for _, p := range EvaluateTemplates(rules, t, in) { // rules_template.go
		add(p, true)
	}
	slices.SortFunc(out, func(a, b event.ProposalCreatedData) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ProposalID derives a proposal's id from its finding and change.
func ProposalID(pattern, family, subject string, c event.Change) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", pattern, family, subject)
	if c.Defaults != nil {
		fmt.Fprintf(h, "%s\x00%s", c.Setting, c.Defaults.Timeout)
		if c.Defaults.Retries != nil {
			fmt.Fprintf(h, "\x00%d", *c.Defaults.Retries)
		}
	}
	if c.Policy != nil {
		fmt.Fprintf(h, "%d\x00%s", c.Policy.Base, c.Policy.Command)
	}
	return "p-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// approversFor is the number of approvers the policy asks for the level
// of risk (at least one).
func approversFor(p *policy.Policy, risk string) int {
	if p == nil {
		return 1
	}
	l, err := policy.ParseLevel(risk)
	if err != nil {
		return 1
	}
	return max(1, p.Approvals[l].Approvers)
}

// noteID is the id of an approved note a rule proposes.
func noteID(pattern, family, subject string) string {
	h := sha256.Sum256([]byte(pattern + "\x00" + family + "\x00" + subject))
	return "n-" + hex.EncodeToString(h[:])[:10]
}

// notesProposal is a proposal to add an approved note (rollback: retire
// it).
func notesProposal(pattern, family, subject, text string) event.ProposalCreatedData {
	id := noteID(pattern, family, subject)
	return event.ProposalCreatedData{Pattern: pattern, Subject: subject, Family: family, Risk: "low",
		Change: event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes,
			Note: &event.NoteChange{Op: event.NoteAdd, ID: id, Text: text, Family: family}},
		Rollback: event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes,
			Note: &event.NoteChange{Op: event.NoteRetire, ID: id, Family: family}},
		Validation: NotesValidation()}
}

// familyRate is the error rate of the attempts of family (every family
// when family is "") in the telemetry, before until (zero: all).
func familyRate(t *Telemetry, family string, match func(*Attempt) bool) event.Rate {
	var r event.Rate
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if a.Family != family || (match != nil && !match(a)) || a.Status == event.TaskCancelled || a.Status == event.TaskSkipped {
			continue
		}
		if r.Total == 0 {
			r.From = a.Time
		}
		r.To = a.Time
		r.Total++
		if a.Failed() {
			r.Errors++
		}
	}
	return r
}

type key struct{ family, subject string }

// shapeFailures is rule (a).
func shapeFailures(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		fails, ok int
		seqs      []uint64
		exit      int
		runs      map[string]bool
	}
	by := map[key]*agg{}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		for _, s := range a.Shapes {
			k := key{a.Family, s}
			g := by[k]
			if g == nil {
				g = &agg{runs: map[string]bool{}}
				by[k] = g
			}
			switch {
			case a.Status == event.TaskSucceeded:
				g.ok++
			case a.Status == event.TaskFailed && a.Class == event.ClassLogic && !a.TimedOut:
				g.fails++
				g.seqs = append(g.seqs, a.Seq)
				g.exit = a.ExitCode
				g.runs[a.Run] = true
			}
		}
	}
	var out []event.ProposalCreatedData
	for _, k := range sortedKeys(by) {
		g := by[k]
		if g.fails < rules.MinFailures || g.fails < g.ok {
			continue
		}
		where := "in runs of no family"
		if k.family != "" {
			where = "in runs of family " + k.family
		}
		text := fmt.Sprintf("`%s` failed %d of %d times %s (last exit code %d): do not plan it as it is; find what it needs first", k.subject, g.fails, g.fails+g.ok, where, g.exit)
		p := notesProposal(PatternShapeFailures, k.family, k.subject, text)
		p.Evidence = g.seqs
		p.RootCause = fmt.Sprintf("the command shape `%s` failed %d times in %d runs of %s", k.subject, g.fails, len(g.runs), orNone(k.family))
		p.ExpectedEffect = "planners are told, with the evidence, not to plan the failing form again: fewer failures of this shape"
		shape := k.subject
		p.Baseline = familyRate(t, k.family, func(a *Attempt) bool { return slices.Contains(a.Shapes, shape) })
		out = append(out, p)
	}
	return out
}

// timeouts is rule (b).
func timeouts(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		n       int
		longest time.Duration
		seqs    []uint64
	}
	by := map[key]*agg{}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if !a.TimedOut || a.SetTimeout {
			continue
		}
		k := key{a.Family, a.Step}
		g := by[k]
		if g == nil {
			g = &agg{}
			by[k] = g
		}
		g.n++
		g.longest = max(g.longest, a.Duration)
		g.seqs = append(g.seqs, a.Seq)
	}
	var out []event.ProposalCreatedData
	for _, k := range sortedKeys(by) {
		g := by[k]
		if g.n < rules.MinTimeouts || k.family == "" {
			continue // defaults are per family: a run of no family is left alone
		}
		limit := (g.longest * time.Duration(rules.TimeoutFactor)).Round(time.Second)
		limit = min(max(limit, time.Second), MaxTimeout)
		var old event.StepDefaults
		if in.State != nil {
			old = in.State.Defaults[k.family]
		}
		if old.Timeout.Std() >= limit {
			continue
		}
		c := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout,
			Defaults: &event.StepDefaults{Family: k.family, Timeout: event.Duration(limit)}}
		v, err := ReplayDefaults(c, t.Attempts)
		if err != nil {
			continue
		}
		out = append(out, event.ProposalCreatedData{Pattern: PatternTimeouts, Subject: k.family + "/" + k.subject, Family: k.family,
			Change: c, Rollback: event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout,
				Defaults: &event.StepDefaults{Family: k.family, Timeout: old.Timeout}},
			Evidence:       g.seqs,
			RootCause:      fmt.Sprintf("step %s of family %s timed out %d times, at up to %s, under the default timeout", k.subject, k.family, g.n, g.longest.Round(time.Millisecond)),
			ExpectedEffect: fmt.Sprintf("steps of family %s that set no timeout get %s: they finish instead of timing out", k.family, limit),
			Risk:           "medium", Validation: v,
			Baseline: familyRate(t, k.family, nil)})
	}
	return out
}

// gatesApproved is rule (c).
func gatesApproved(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	if in.Policy == nil || in.PolicyText == "" {
		return nil
	}
	type agg struct {
		accepted, refused int
		seqs              []uint64
		dir               string
	}
	by := map[string]*agg{}
	for i := range t.Gates {
		g := &t.Gates[i]
		a := by[g.Command]
		if a == nil {
			a = &agg{dir: g.Dir}
			by[g.Command] = a
		}
		a.refused += g.Refused
		if g.Accepted > 0 && g.Refused == 0 {
			a.accepted++
			a.seqs = append(a.seqs, g.Seq)
			a.seqs = append(a.seqs, g.Answers...)
		}
	}
	var out []event.ProposalCreatedData
	for _, cmd := range slices.Sorted(maps.Keys(by)) {
		a := by[cmd]
		if a.accepted < rules.MinApprovals || a.refused > 0 {
			continue
		}
		if Rememberable(in.Policy, cmd, a.dir) != nil {
			continue
		}
		if v := in.Policy.JudgeIn(cmd, a.dir); v.Action != policy.Confirm {
			continue // allowed already, or denied
		}
		name := "proposal " + ProposalID(PatternGatesApproved, "", cmd, event.Change{Policy: &event.PolicyChange{Base: in.Policy.Version, Command: cmd}})
		text, err := policy.Remember([]byte(in.PolicyText), cmd, a.dir, name, fmt.Sprintf("approved %d times at a gate", a.accepted))
		if err != nil {
			continue
		}
		next, err := policy.Parse(text, "proposed policy")
		if err != nil {
			continue
		}
		c := event.Change{Kind: event.ChangePolicy, Setting: event.SettingPolicy, Policy: &event.PolicyChange{
			Base: in.Policy.Version, Text: string(text), Hash: next.Hash(), Command: cmd, Dir: a.dir}}
		v, err := CheckPolicy(in.Policy, c, append(slices.Clone(t.Commands), cmd))
		if err != nil {
			continue
		}
		out = append(out, event.ProposalCreatedData{Pattern: PatternGatesApproved, Subject: cmd,
			Change: c, Rollback: event.Change{Kind: event.ChangePolicy, Setting: event.SettingPolicy,
				Policy: &event.PolicyChange{Base: in.Policy.Version + 1, Text: in.PolicyText, Hash: in.Policy.Hash()}},
			Evidence:       a.seqs,
			RootCause:      fmt.Sprintf("operators accepted the gate of %q %d times and never refused it", cmd, a.accepted),
			ExpectedEffect: "the command runs without a gate: what gate approve --remember would write, proposed with evidence",
			Risk:           "high", Validation: v,
			Baseline: event.Rate{Errors: 0, Total: a.accepted}})
	}
	return out
}

// replans is rule (d).
func replans(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		n    int
		seqs []uint64
		errs []string
	}
	by := map[key]*agg{}
	for i := range t.Replans {
		r := &t.Replans[i]
		subject := strings.Join(r.Shapes, "; ")
		if subject == "" {
			subject = "step " + r.Step
		}
		k := key{r.Family, subject}
		g := by[k]
		if g == nil {
			g = &agg{}
			by[k] = g
		}
		g.n++
		g.seqs = append(g.seqs, r.Seq)
		if r.Error != "" && len(g.errs) < 3 && !slices.Contains(g.errs, r.Error) {
			g.errs = append(g.errs, r.Error)
		}
	}
	var out []event.ProposalCreatedData
	for _, k := range sortedKeys(by) {
		g := by[k]
		if g.n < rules.MinReplans {
			continue
		}
		errs := ""
		if len(g.errs) > 0 {
			errs = " (" + strings.Join(g.errs, "; ") + ")"
		}
		text := fmt.Sprintf("plans of %s: `%s` failed and was replanned %d times%s: plan the form that works the first time", orNone(k.family), k.subject, g.n, errs)
		if len(text) > MaxNoteLen {
			text = text[:MaxNoteLen]
		}
		p := notesProposal(PatternReplans, k.family, k.subject, text)
		p.Evidence = g.seqs
		p.RootCause = fmt.Sprintf("%d replans of %s fixed the same failing `%s`", g.n, orNone(k.family), k.subject)
		p.ExpectedEffect = "the first plan avoids the mistake: fewer replans of this family"
		p.Baseline = familyRate(t, k.family, nil)
		out = append(out, p)
	}
	return out
}

// feedback is rule (e).
func feedback(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		down, up int
		seqs     []uint64
		reasons  []string
	}
	by := map[string]*agg{}
	for i := range t.Ratings {
		r := &t.Ratings[i]
		g := by[r.Family]
		if g == nil {
			g = &agg{}
			by[r.Family] = g
		}
		if !r.Down {
			g.up++
			continue
		}
		g.down++
		g.seqs = append(g.seqs, r.Seq)
		if r.Reason != "" && len(g.reasons) < 3 && !slices.Contains(g.reasons, r.Reason) {
			g.reasons = append(g.reasons, r.Reason)
		}
	}
	var out []event.ProposalCreatedData
	for _, fam := range slices.Sorted(maps.Keys(by)) {
		g := by[fam]
		if fam == "" || g.down < rules.MinRatings || g.down <= g.up {
			continue
		}
		reasons := ""
		if len(g.reasons) > 0 {
			reasons = ": " + strings.Join(g.reasons, "; ")
		}
		text := fmt.Sprintf("runs of family %s were rated down %d of %d times%s", fam, g.down, g.down+g.up, reasons)
		if len(text) > MaxNoteLen {
			text = text[:MaxNoteLen]
		}
		p := notesProposal(PatternFeedback, fam, "family "+fam, text)
		p.Evidence = g.seqs
		p.RootCause = fmt.Sprintf("operators rated %d runs of family %s down%s", g.down, fam, reasons)
		p.ExpectedEffect = "planners of this family are told what operators disliked"
		p.Baseline = event.Rate{Errors: g.down, Total: g.down + g.up}
		out = append(out, p)
	}
	return out
}

// orNone names a family in sentences.
func orNone(family string) string {
	if family == "" {
		return "no family"
	}
	return "family " + family
}

func sortedKeys[V any](m map[key]V) []key {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(a, b key) int { return cmp.Or(cmp.Compare(a.family, b.family), cmp.Compare(a.subject, b.subject)) })
	return ks
}

// runStep names one step of one run.
type runStep struct{ run, step string }

// passedAt is, for each step of a run that passed, the first attempt
// that passed.
func passedAt(attempts []Attempt) map[runStep]int {
	out := map[runStep]int{}
	for i := range attempts {
		a := &attempts[i]
		if a.Status != event.TaskSucceeded {
			continue
		}
		k := runStep{a.Run, a.Step}
		if n, ok := out[k]; !ok || a.Attempt < n {
			out[k] = a.Attempt
		}
	}
	return out
}

// transientFailure reports whether a is a failure retries are for: of a
// step that set no retries, not a timeout (the timeouts rule's), and of
// class transient, or retryable and passed when run again (passed: the
// first attempt of its step that passed, 0 for none).
func transientFailure(a *Attempt, passed int) bool {
	if !a.Failed() || a.TimedOut || a.SetRetries {
		return false
	}
	return a.Class == event.ClassTransient || (a.Retryable && passed > a.Attempt)
}

// retries is rule (f): a family whose steps fail transiently, with no
// default retries in force, gets default retries, as many as the
// recorded re-runs needed to pass (at least one, at most
// Rules.MaxProposedRetries).
func retries(rules Rules, t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		n, again, need int
		seqs           []uint64
	}
	passed := passedAt(t.Attempts)
	by := map[string]*agg{}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		at := passed[runStep{a.Run, a.Step}]
		if a.Family == "" || !transientFailure(a, at) {
			continue
		}
		g := by[a.Family]
		if g == nil {
			g = &agg{}
			by[a.Family] = g
		}
		g.n++
		g.seqs = append(g.seqs, a.Seq)
		need := 1
		if at > a.Attempt {
			g.again++
			need = at - a.Attempt
		}
		g.need = max(g.need, need)
	}
	var out []event.ProposalCreatedData
	for _, fam := range slices.Sorted(maps.Keys(by)) {
		g := by[fam]
		if g.n < rules.MinTransient {
			continue
		}
		var old event.StepDefaults
		if in.State != nil {
			old = in.State.Defaults[fam]
		}
		if old.Retries != nil && *old.Retries > 0 {
			continue // retries in force: what fails still is not for more of them
		}
		n := min(max(g.need, 1), rules.MaxProposedRetries, MaxRetries)
		c := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries,
			Defaults: &event.StepDefaults{Family: fam, Retries: &n}}
		v, err := ReplayDefaults(c, t.Attempts)
		if err != nil || v.Retry == 0 {
			continue
		}
		out = append(out, event.ProposalCreatedData{Pattern: PatternRetries, Subject: fam, Family: fam,
			Change: c, Rollback: event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries,
				Defaults: &event.StepDefaults{Family: fam, Retries: old.Retries}},
			Evidence: g.seqs,
			RootCause: fmt.Sprintf("steps of family %s failed transiently %d times (%d of them passed when run again) with no retries in force",
				fam, g.n, g.again),
			ExpectedEffect: fmt.Sprintf("steps of family %s that set no retries are retried up to %d times: a transient failure ends in a pass instead of a failed run", fam, n),
			Risk:           "medium", Validation: v,
			Baseline: familyRate(t, fam, nil)})
	}
	return out
}
