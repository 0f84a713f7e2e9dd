package improve

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Patterns of the note rules (issue 24): whether a planner note helps.
const (
	// PatternNoteHelps: since an automatic note (auto:<shape>) appeared,
	// its shape failed at most half as often as before: the note helps,
	// so it is pinned (it stays when the statistics would drop it).
	PatternNoteHelps = "note_helps"
	// PatternNoteUnhelpful: since a note was shown, what it is about
	// fails about as often as before, or more: the note does not help, or
	// misleads, so it is retired.
	PatternNoteUnhelpful = "note_unhelpful"
	// PatternNoteUnused: an approved note names commands no step of its
	// family used in the telemetry window, while it is older than the
	// window: it is retired.
	PatternNoteUnused = "note_unused"
)

// The note rules' thresholds: the build's, like Rules (no proposal
// reaches them: Forbidden refuses every setting under "improve").
const (
	// noteAppears is how many failures make the command statistics show a
	// note (roles/memory: at least 3, and at least as many as successes).
	noteAppears = 3
	// noteMinAfter is how many attempts of what a note is about, since it
	// was shown, the note rules need to judge it.
	noteMinAfter = 5
	// noteMinRuns is how many runs of a note's family the window must hold
	// before a note no step of them used is called unused.
	noteMinRuns = 3
)

// helps reports whether after fails at most half as often as before.
func helps(before, after event.Rate) bool {
	return after.Errors*2*before.Total <= before.Errors*after.Total
}

// unhelpful reports whether after fails at least three quarters as often
// as before, or more. Between helps and unhelpful, a note is left alone.
func unhelpful(before, after event.Rate) bool {
	return after.Errors*4*before.Total >= 3*before.Errors*after.Total
}

// noteRules runs the note rules: pin an automatic note that helps,
// retire a note that does not help or names commands nobody uses.
func noteRules(t *Telemetry, in Input) []event.ProposalCreatedData {
	out := autoNotes(t, in)
	out = append(out, approvedNotes(t, in)...)
	return out
}

// busyNotes are the notes a proposal not yet final changes: no rule
// proposes another change of them meanwhile.
func busyNotes(st *State) map[string]bool {
	busy := map[string]bool{}
	if st == nil {
		return busy
	}
	for _, p := range st.Proposals {
		if p.Status.Final() {
			continue
		}
		for _, c := range []event.Change{p.Change, p.Rollback} {
			if c.Note != nil {
				busy[c.Note.ID] = true
			}
		}
	}
	return busy
}

// noteChange is a change of the planner notes.
func noteChange(op, id, text, family string) event.Change {
	return event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes,
		Note: &event.NoteChange{Op: op, ID: id, Text: text, Family: family}}
}

// shapeCount is how the statistics count an attempt of a shape: a
// success, a failure of the command (class logic), or nothing (a timeout,
// a lost node, a cancellation say nothing of the command).
func shapeCount(a *Attempt) (counts, failed bool) {
	switch {
	case a.Status == event.TaskSucceeded:
		return true, false
	case a.Status == event.TaskFailed && a.Class == event.ClassLogic:
		return true, true
	}
	return false, false
}

// autoNotes judges the automatic notes, as far as the window shows them:
// for each command shape, the note appears at the attempt whose failure
// makes the window's counts meet the statistics' rule (at least 3
// failures, at least as many as successes); the attempts before it are
// the baseline, those after it what the note did.
func autoNotes(t *Telemetry, in Input) []event.ProposalCreatedData {
	type agg struct {
		before, after event.Rate
		shown         bool
		seqs          []uint64
	}
	by := map[string]*agg{}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		counts, failed := shapeCount(a)
		if !counts {
			continue
		}
		for _, s := range a.Shapes {
			g := by[s]
			if g == nil {
				g = &agg{}
				by[s] = g
			}
			r := &g.before
			if g.shown {
				r = &g.after
			}
			if r.Total == 0 {
				r.From = a.Time
			}
			r.To = a.Time
			r.Total++
			if failed {
				r.Errors++
			}
			g.seqs = append(g.seqs, a.Seq)
			if !g.shown && g.before.Errors >= noteAppears && g.before.Errors*2 >= g.before.Total {
				g.shown = true
			}
		}
	}
	st := in.State
	busy := busyNotes(st)
	var out []event.ProposalCreatedData
	for _, shape := range slices.Sorted(maps.Keys(by)) {
		g := by[shape]
		id := AutoPrefix + shape
		if !g.shown || g.after.Total < noteMinAfter || busy[id] || (st != nil && st.Retired[id]) {
			continue
		}
		total := event.Rate{Errors: g.before.Errors + g.after.Errors, Total: g.before.Total + g.after.Total}
		since := fmt.Sprintf("`%s` failed %d of %d times before the note about it, %d of %d since",
			shape, g.before.Errors, g.before.Total, g.after.Errors, g.after.Total)
		var p event.ProposalCreatedData
		switch {
		case helps(g.before, g.after):
			text := fmt.Sprintf("`%s` failed %d of %d times; since planners were told, %d of %d: plan it as the plans that succeed do",
				shape, total.Errors, total.Total, g.after.Errors, g.after.Total)
			p = event.ProposalCreatedData{Pattern: PatternNoteHelps,
				Change:         noteChange(event.NotePin, id, truncateNote(text), ""),
				RootCause:      since + ": the automatic note helps, and the statistics drop it once the shape succeeds more often than it fails",
				ExpectedEffect: "the note stays, approved, whatever the statistics say: the shape keeps failing as rarely as since the note"}
		case unhelpful(g.before, g.after) && total.Errors >= noteAppears && total.Errors >= total.Total-total.Errors:
			// (The statistics still show it: at least 3 failures, at least
			// as many as successes.)
			p = event.ProposalCreatedData{Pattern: PatternNoteUnhelpful,
				Change:         noteChange(event.NoteRetire, id, "", ""),
				RootCause:      since + ": the automatic note does not help planners avoid it",
				ExpectedEffect: "planners are no longer told a note that does not change what they plan: a shorter prompt, and no more failures of the shape than with it"}
		default:
			continue
		}
		p.Subject, p.Risk = id, "low"
		p.Rollback = noteChange(event.NoteRestore, id, "", "")
		p.Validation = NotesValidation()
		p.Evidence = g.seqs
		// The rate of what it touches before the change, as for every
		// proposal: the rate while the note was shown. The monitor
		// reverts a pin after which the shape fails more (the note
		// misleads now), and a retire after which it fails more (the
		// note helped after all).
		p.Baseline = g.after
		out = append(out, p)
	}
	return out
}

// truncateNote cuts a note's text to MaxNoteLen.
func truncateNote(s string) string {
	if len(s) > MaxNoteLen {
		return s[:MaxNoteLen]
	}
	return s
}

// noteShapes are the command shapes an approved note is about, read from
// the proposal that made it: a shape failure's shape, a pinned automatic
// note's, a replan's shapes; none for a note about a whole family.
func noteShapes(origin *Proposal, id string) []string {
	if shape, ok := strings.CutPrefix(id, AutoPrefix); ok {
		return []string{shape}
	}
	switch origin.Pattern {
	case PatternShapeFailures:
		return []string{origin.Subject}
	case PatternReplans:
		if strings.HasPrefix(origin.Subject, "step ") {
			return nil
		}
		return strings.Split(origin.Subject, "; ")
	}
	return nil
}

// touches reports whether the attempt a is about a note of family with
// shapes (none: every attempt of the family; a note of no family and
// shapes: every family's).
func touches(a *Attempt, family string, shapes []string) bool {
	if a.Status == event.TaskCancelled || a.Status == event.TaskSkipped {
		return false
	}
	if len(shapes) == 0 {
		return a.Family == family
	}
	if family != "" && a.Family != family {
		return false
	}
	return slices.ContainsFunc(shapes, func(s string) bool { return slices.Contains(a.Shapes, s) })
}

// approvedNotes judges the approved notes whose proposal ended
// implemented (the monitor is done with it): one whose attempts since it
// was applied fail about as often as its baseline, or more, is retired as
// unhelpful; one older than the window that names shapes no step of the
// window's runs of its family used (the window holding at least
// noteMinRuns of them) is retired as unused.
func approvedNotes(t *Telemetry, in Input) []event.ProposalCreatedData {
	st := in.State
	if st == nil {
		return nil
	}
	busy := busyNotes(st)
	var out []event.ProposalCreatedData
	for _, n := range st.Notes {
		origin := st.Proposals[n.Proposal]
		if origin == nil || origin.Status != StatusImplemented || busy[n.ID] {
			continue
		}
		shapes := noteShapes(origin, n.ID)
		var after event.Rate
		var seqs []uint64
		runs := map[string]bool{}
		var used bool
		for i := range t.Attempts {
			a := &t.Attempts[i]
			if a.Family == n.Family || n.Family == "" {
				runs[a.Run] = true
			}
			if !touches(a, n.Family, shapes) {
				continue
			}
			used = true
			if a.Seq <= origin.ChangeSeq {
				continue
			}
			if after.Total == 0 {
				after.From = a.Time
			}
			after.To = a.Time
			after.Total++
			if a.Failed() {
				after.Errors++
			}
			seqs = append(seqs, a.Seq)
		}
		where := "plans of " + orNone(n.Family)
		if n.Family == "" {
			where = "plans of every family"
		}
		base := origin.Baseline
		var p event.ProposalCreatedData
		switch {
		case origin.Pattern != PatternFeedback && origin.Pattern != PatternNoteHelps && after.Total >= noteMinAfter && after.Errors > 0 &&
			base.Total >= noteAppears && base.Errors > 0 && unhelpful(base, after):
			// (A feedback note's baseline is its ratings, not attempts; a
			// pin's is the rate since the note, which the monitor judged.)
			p = event.ProposalCreatedData{Pattern: PatternNoteUnhelpful,
				RootCause: fmt.Sprintf("since note %s was shown to %s (proposal %s), what it is about failed %d of %d times, against %d of %d before: it does not help, or misleads",
					n.ID, where, origin.ID, after.Errors, after.Total, base.Errors, base.Total),
				ExpectedEffect: "planners are no longer told a note that does not help: no more failures than with it",
				Evidence:       seqs, Baseline: after}
		case len(shapes) > 0 && !used && len(runs) >= noteMinRuns && !origin.Applied.IsZero() && in.Now.Sub(origin.Applied) > t.Window:
			p = event.ProposalCreatedData{Pattern: PatternNoteUnused,
				RootCause: fmt.Sprintf("note %s (proposal %s, applied %s) names `%s`, which no step of the %d runs of %s in the last %s used",
					n.ID, origin.ID, origin.Applied.UTC().Format(time.RFC3339), strings.Join(shapes, "`, `"), len(runs), where, t.Window),
				ExpectedEffect: "planners are no longer told about commands they do not plan: a shorter prompt",
				Evidence:       runEvidence(t, runs, n.Family)}
		default:
			continue
		}
		p.Subject, p.Family, p.Risk = n.ID, n.Family, "low"
		p.Change = noteChange(event.NoteRetire, n.ID, "", n.Family)
		if strings.HasPrefix(n.ID, AutoPrefix) {
			p.Rollback = noteChange(event.NotePin, n.ID, n.Text, n.Family) // the pinned copy again
		} else {
			p.Rollback = noteChange(event.NoteAdd, n.ID, n.Text, n.Family)
		}
		p.Validation = NotesValidation()
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b event.ProposalCreatedData) int { return cmp.Compare(a.Subject, b.Subject) })
	return out
}

// runEvidence is the ledger positions of the attempts of runs (of
// family, or of every family when it is "").
func runEvidence(t *Telemetry, runs map[string]bool, family string) []uint64 {
	var out []uint64
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if runs[a.Run] && (family == "" || a.Family == family) {
			out = append(out, a.Seq)
		}
	}
	return out
}

// noteAffects is Affects for the note rules' proposals (their subject is
// the note's id): an automatic note's shape, in every family (in its
// family, once pinned with one); for another note, its family.
func noteAffects(p *Proposal, a *Attempt) bool {
	if shape, ok := strings.CutPrefix(p.Subject, AutoPrefix); ok {
		return touches(a, p.Family, []string{shape})
	}
	return touches(a, p.Family, nil)
}
