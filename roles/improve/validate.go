package improve

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/policy"
)

// ErrForbidden is tuning.ErrForbidden.
var ErrForbidden = tuning.ErrForbidden

// Limits of what a change may set (tuning's).
const (
	MaxNoteLen = tuning.MaxNoteLen
	MaxTimeout = tuning.MaxTimeout
	MaxRetries = tuning.MaxRetries
	AutoPrefix = tuning.AutoPrefix
)

// Forbidden checks a change as every fold does (tuning.Forbidden) and,
// on the leader's side, that it carries no secret.
func Forbidden(c event.Change) error {
	if err := tuning.Forbidden(c); err != nil {
		return err
	}
	if b, err := json.Marshal(c); err == nil && redact.ContainsSecret(string(b)) {
		return fmt.Errorf("%w: the change carries what looks like a secret", ErrForbidden)
	}
	return nil
}

// CheckPolicy validates a policy change against the policy in force
// (current) and re-judges commands (the last ones the cluster ran or
// held at a gate) under both. It refuses (ErrForbidden) a change that is
// not based on current, does not load or hash as it says, removes or
// changes any rule (deny rules included: a change only adds rules), adds
// an allow rule other than the narrow one of its Command, loosens the
// default, unresolved or level actions, the approvals, the scopes or the
// tools, raises a budget, or allows anything current denied; and an
// allow whose Command a deny, critical, unresolved or irreversible
// judgement of current covers.
func CheckPolicy(current *policy.Policy, c event.Change, commands []string) (event.Validation, error) {
	v := event.Validation{Method: "rejudge"}
	if err := Forbidden(c); err != nil {
		return v, err
	}
	pc := c.Policy
	if current == nil {
		return v, fmt.Errorf("%w: no policy in force to change", ErrForbidden)
	}
	if pc.Base != current.Version {
		return v, fmt.Errorf("%w: the change is based on policy version %d, version %d is in force", ErrForbidden, pc.Base, current.Version)
	}
	next, err := policy.Parse([]byte(pc.Text), "proposed policy")
	if err != nil {
		return v, fmt.Errorf("%w: the proposed policy does not load: %w", ErrForbidden, err)
	}
	if next.Hash() != pc.Hash {
		return v, fmt.Errorf("%w: the proposed policy hashes to %s, not %s", ErrForbidden, next.Hash(), pc.Hash)
	}
	if err := narrows(current, next, pc); err != nil {
		return v, err
	}
	for _, cmd := range commands {
		before, after := current.Judge(cmd), next.Judge(cmd)
		v.Judged++
		if after.Action >= before.Action {
			continue
		}
		if before.Action == policy.Deny {
			return v, fmt.Errorf("%w: the proposed policy would allow %q, which the policy in force denies", ErrForbidden, cmd)
		}
		if cmd != pc.Command {
			return v, fmt.Errorf("%w: the proposed policy loosens the verdict on %q, which it does not name", ErrForbidden, cmd)
		}
		v.NewAllows++
	}
	v.Summary = fmt.Sprintf("re-judged %d recorded commands: %d newly allowed (the command it names), none denied before", v.Judged, v.NewAllows)
	return v, nil
}

// Rememberable reports whether an allow of command may be proposed: the
// policy in force judges it neither deny, nor critical, nor unresolved,
// nor irreversible.
func Rememberable(p *policy.Policy, command, dir string) error {
	v := p.JudgeIn(command, dir)
	switch {
	case v.Action == policy.Deny:
		return fmt.Errorf("%w: %q is denied (%s)", ErrForbidden, command, v.Rule)
	case v.Level == policy.Critical:
		return fmt.Errorf("%w: %q is judged critical (%s)", ErrForbidden, command, v.Rule)
	case v.Unresolved:
		return fmt.Errorf("%w: %q cannot be judged statically", ErrForbidden, command)
	case !v.Reversible:
		return fmt.Errorf("%w: %q is judged irreversible (%s)", ErrForbidden, command, v.Rule)
	}
	return nil
}

// narrows checks the structure: rules only added, nothing else loosened.
func narrows(old, next *policy.Policy, pc *event.PolicyChange) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrForbidden, fmt.Sprintf(format, a...))
	}
	if next.Default < old.Default || next.Unresolved < old.Unresolved {
		return bad("the proposed policy loosens the default or unresolved action")
	}
	for l := range old.Levels {
		if next.Levels[l] < old.Levels[l] {
			return bad("the proposed policy loosens the action of level %s", policy.Level(l))
		}
		if next.Approvals[l].Approvers < old.Approvals[l].Approvers || (old.Approvals[l].NotSubmitter && !next.Approvals[l].NotSubmitter) {
			return bad("the proposed policy lowers the approvals of level %s", policy.Level(l))
		}
	}
	if next.IrreversibleExtra < old.IrreversibleExtra {
		return bad("the proposed policy lowers the approvers of irreversible commands")
	}
	if err := budgetsNotRaised(old.Budgets, next.Budgets); err != nil {
		return err
	}
	if !subset(next.Scopes.Files, old.Scopes.Files) || !subset(next.Scopes.Network, old.Scopes.Network) || next.Scopes.Outside < old.Scopes.Outside ||
		(len(old.Scopes.Files) > 0 && len(next.Scopes.Files) == 0) {
		return bad("the proposed policy widens the scopes")
	}
	if !sameJSON(old.Tools, next.Tools) {
		return bad("the proposed policy changes the tool rules")
	}
	if len(next.Rules) < len(old.Rules) {
		return bad("the proposed policy removes rules (deny rules included): a proposal only adds")
	}
	for i, r := range old.Rules {
		if !sameJSON(r, next.Rules[i]) {
			return bad("the proposed policy changes rule %q: a proposal only adds rules", r.Name)
		}
	}
	for _, r := range next.Rules[len(old.Rules):] {
		if r.Action == policy.Allow || (r.Action == 0 && r.Level > 0 && next.Levels[r.Level] == policy.Allow) {
			if pc.Command == "" {
				return bad("the proposed policy adds allow rule %q without naming the command it allows", r.Name)
			}
			if err := Rememberable(old, pc.Command, pc.Dir); err != nil {
				return err
			}
			want, err := policy.Remember([]byte("rules: []\n"), pc.Command, pc.Dir, r.Name, r.Reason)
			if err != nil {
				return bad("allow rule %q: %v", r.Name, err)
			}
			wp, err := policy.Parse(want, "remembered")
			if err != nil || len(wp.Rules) != 1 || !sameJSON(wp.Rules[0].Match, r.Match) {
				return bad("allow rule %q is not the narrow rule of %q that gate approve --remember writes", r.Name, pc.Command)
			}
		}
	}
	return nil
}

func budgetsNotRaised(old, next policy.Budgets) error {
	raised := func(o, n int64) bool { return o > 0 && (n == 0 || n > o) }
	if raised(int64(old.RunTime), int64(next.RunTime)) || raised(int64(old.Steps), int64(next.Steps)) ||
		raised(int64(old.Replans), int64(next.Replans)) || raised(int64(old.LLMTokens), int64(next.LLMTokens)) {
		return fmt.Errorf("%w: the proposed policy raises a budget", ErrForbidden)
	}
	return nil
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// ReplayDefaults checks a step defaults change by replaying the recorded
// attempts it would have touched (those of its family whose step set no
// value of its own) against the new value: how many would have passed,
// failed, been retried, or cannot be judged. It refuses (ErrForbidden) a
// change under which an attempt that passed would have failed.
func ReplayDefaults(c event.Change, attempts []Attempt) (event.Validation, error) {
	v := event.Validation{Method: "replay"}
	if err := Forbidden(c); err != nil {
		return v, err
	}
	d := c.Defaults
	if c.Kind != event.ChangeStepDefaults {
		return v, fmt.Errorf("improve: replay: a %s change is not replayed", c.Kind)
	}
	regress, again := 0, 0
	var passed map[runStep]int
	if c.Setting == event.SettingDefaultsRetries {
		passed = passedAt(attempts)
	}
	for _, a := range attempts {
		if a.Family != d.Family || a.Status == "" {
			continue
		}
		switch c.Setting {
		case event.SettingDefaultsTimeout:
			if a.SetTimeout || d.Timeout == 0 {
				continue
			}
			limit := d.Timeout.Std()
			switch {
			case a.TimedOut && a.Duration >= limit:
				v.Fail++
			case a.TimedOut:
				v.Unknown++
			case a.Status == event.TaskSucceeded && a.Duration > limit:
				v.Fail++
				regress++
			case a.Status == event.TaskSucceeded:
				v.Pass++
			default:
				v.Fail++
			}
		case event.SettingDefaultsRetries:
			if a.SetRetries {
				continue
			}
			retries := 0
			if d.Retries != nil {
				retries = *d.Retries
			}
			switch {
			case a.Status == event.TaskSucceeded:
				v.Pass++
			case a.Status == event.TaskFailed && a.Retryable && a.Attempt <= retries:
				v.Retry++
				if at := passed[runStep{a.Run, a.Step}]; at > a.Attempt && at <= a.Attempt+retries {
					again++
				}
			default:
				v.Fail++
			}
		}
	}
	v.Summary = fmt.Sprintf("replayed %d recorded attempts of family %q under %s: %d pass, %d fail, %d retried, %d unknown",
		v.Pass+v.Fail+v.Retry+v.Unknown, d.Family, describe(c), v.Pass, v.Fail, v.Retry, v.Unknown)
	if c.Setting == event.SettingDefaultsRetries && v.Retry > 0 {
		v.Summary += fmt.Sprintf(" (%d of them passed when run again within those retries)", again)
	}
	if regress > 0 {
		return v, fmt.Errorf("%w: %d recorded attempts that succeeded would have timed out under %s", ErrForbidden, regress, describe(c))
	}
	return v, nil
}

// describe names a change's new value.
func describe(c event.Change) string {
	switch c.Kind {
	case event.ChangeStepDefaults:
		if c.Setting == event.SettingDefaultsTimeout {
			if c.Defaults.Timeout == 0 {
				return "no default timeout"
			}
			return "a default timeout of " + c.Defaults.Timeout.String()
		}
		if c.Defaults.Retries == nil {
			return "no default retries"
		}
		return fmt.Sprintf("%d default retries", *c.Defaults.Retries)
	case event.ChangeNotes:
		return c.Note.Op + " note " + c.Note.ID
	case event.ChangePolicy:
		return fmt.Sprintf("policy after version %d", c.Policy.Base)
	}
	return string(c.Kind)
}

// NotesValidation is the validation of a notes or template change: the
// forbidden-change checks only. Replay reads the recorded model answers,
// so it proves nothing about a prompt's change.
func NotesValidation() event.Validation {
	return event.Validation{Method: "forbidden-checks",
		Summary: "forbidden-change checks only: a replay reads the recorded model answers, so it proves nothing about a change to what planners are told"}
}
