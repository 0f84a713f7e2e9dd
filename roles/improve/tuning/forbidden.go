package tuning

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrForbidden marks a change no proposal may make: it touches the trust
// root, credentials, NATS permissions, deny rules, budgets upward, the
// evaluation rules or the monitor's thresholds, or a setting proposals do
// not change at all. Such a proposal is refused at creation and at apply.
var ErrForbidden = errors.New("improve: forbidden change")

// Limits of what a change may set.
const (
	// MaxNoteLen bounds a note's text.
	MaxNoteLen = 500
	// MaxTimeout bounds a default timeout.
	MaxTimeout = 24 * time.Hour
	// MaxRetries bounds default retries.
	MaxRetries = 5
)

// forbiddenSettings names, by prefix, the settings that are out of every
// proposal's reach, and why.
var forbiddenSettings = []struct{ prefix, why string }{
	{"trust", "the trust root"},
	{"root", "the trust root"},
	{"keys", "the trust root"},
	{"credential", "credentials"},
	{"natsauth", "NATS permissions"},
	{"nats", "NATS permissions"},
	{"permissions", "NATS permissions"},
	{"budgets", "budgets"},
	{"improve", "the evaluation rules and the monitor's thresholds"},
	{"eval", "the evaluation rules"},
	{"monitor", "the monitor's thresholds"},
	{"policy.deny", "deny rules"},
}

// settingOf is the setting each change kind must name.
var settingOf = map[event.ChangeKind][]string{
	event.ChangeNotes:        {event.SettingPlannerNotes},
	event.ChangeStepDefaults: {event.SettingDefaultsTimeout, event.SettingDefaultsRetries},
	event.ChangePolicy:       {event.SettingPolicy},
	event.ChangeTemplate:     {event.SettingTemplate},
	event.ChangeRepository:   {event.SettingRepository},
}

// Forbidden checks what can be checked of a change without the cluster's
// state: that it names a setting proposals may change, of its kind, with
// values in bounds and no secret. A policy change is checked against the
// policy in force by CheckPolicy as well. The error wraps ErrForbidden.
func Forbidden(c event.Change) error {
	setting := strings.ToLower(strings.TrimSpace(c.Setting))
	for _, f := range forbiddenSettings {
		if strings.HasPrefix(setting, f.prefix) {
			return fmt.Errorf("%w: setting %q: a proposal never changes %s", ErrForbidden, c.Setting, f.why)
		}
	}
	want, ok := settingOf[c.Kind]
	if !ok {
		return fmt.Errorf("%w: unknown change kind %q (want notes, template, step_defaults, policy or repository)", ErrForbidden, c.Kind)
	}
	if !slices.Contains(want, c.Setting) {
		return fmt.Errorf("%w: a %s change names setting %q, want %s", ErrForbidden, c.Kind, c.Setting, strings.Join(want, " or "))
	}
	if n := count(c.Note != nil, c.Defaults != nil, c.Policy != nil, c.Template != nil, c.Repository != nil); n != 1 {
		return fmt.Errorf("%w: a change carries exactly one of note, defaults, policy, template, repository (it has %d)", ErrForbidden, n)
	}
	switch c.Kind {
	case event.ChangeNotes:
		return checkNote(c.Note)
	case event.ChangeStepDefaults:
		return checkDefaults(c.Setting, c.Defaults)
	case event.ChangePolicy:
		if c.Policy == nil || strings.TrimSpace(c.Policy.Text) == "" {
			return fmt.Errorf("%w: a policy change carries no policy", ErrForbidden)
		}
	case event.ChangeTemplate:
		return checkTemplate(c.Template)
	case event.ChangeRepository:
		return checkRepo(c.Repository)
	}
	return nil
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func checkNote(n *event.NoteChange) error {
	switch n.Op {
	case event.NoteAdd, event.NoteEdit, event.NotePin:
		if strings.TrimSpace(n.Text) == "" {
			return fmt.Errorf("%w: note %s: no text", ErrForbidden, n.ID)
		}
	case event.NoteRetire, event.NoteRestore:
	default:
		return fmt.Errorf("%w: note op %q (want add, edit, pin, retire or restore)", ErrForbidden, n.Op)
	}
	if n.ID == "" || len(n.ID) > 200 {
		return fmt.Errorf("%w: a note needs an id of at most 200 bytes", ErrForbidden)
	}
	if (n.Op == event.NotePin || n.Op == event.NoteRestore) && !strings.HasPrefix(n.ID, AutoPrefix) {
		return fmt.Errorf("%w: only an automatic note (%s…) is pinned or restored, not %s", ErrForbidden, AutoPrefix, n.ID)
	}
	if len(n.Text) > MaxNoteLen {
		return fmt.Errorf("%w: note %s: %d bytes, at most %d", ErrForbidden, n.ID, len(n.Text), MaxNoteLen)
	}
	if n.Family != "" && event.ValidFamily(n.Family) != nil {
		return fmt.Errorf("%w: note %s: invalid family %q", ErrForbidden, n.ID, n.Family)
	}
	return nil
}

func checkDefaults(setting string, d *event.StepDefaults) error {
	if d.Family != "" && event.ValidFamily(d.Family) != nil {
		return fmt.Errorf("%w: step defaults: invalid family %q", ErrForbidden, d.Family)
	}
	switch setting {
	case event.SettingDefaultsTimeout:
		if d.Retries != nil {
			return fmt.Errorf("%w: a defaults.timeout change sets no retries", ErrForbidden)
		}
		if d.Timeout < 0 || d.Timeout.Std() > MaxTimeout {
			return fmt.Errorf("%w: default timeout %s: want at most %s", ErrForbidden, d.Timeout, MaxTimeout)
		}
	case event.SettingDefaultsRetries:
		if d.Timeout != 0 {
			return fmt.Errorf("%w: a defaults.retries change sets no timeout", ErrForbidden)
		}
		if d.Retries != nil && (*d.Retries < 0 || *d.Retries > MaxRetries) {
			return fmt.Errorf("%w: default retries %d: want 0 to %d", ErrForbidden, *d.Retries, MaxRetries)
		}
	}
	return nil
}
