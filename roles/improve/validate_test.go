package improve

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

func intp(i int) *int { return &i }

func notes(id, text string) event.Change {
	return event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: event.NoteAdd, ID: id, Text: text}}
}

// TestForbiddenChanges: a change that names the trust root,
// credentials, NATS permissions, budgets, deny rules, the evaluation
// rules or the monitor's thresholds, or carries out-of-bounds values or
// a secret, is refused with ErrForbidden; the changes proposals make
// pass.
func TestForbiddenChanges(t *testing.T) {
	bad := map[string]event.Change{
		"trust root":         {Kind: event.ChangeNotes, Setting: "trust.root", Note: &event.NoteChange{Op: "add", ID: "x", Text: "y"}},
		"credentials":        {Kind: event.ChangeStepDefaults, Setting: "credentials.ttl", Defaults: &event.StepDefaults{}},
		"nats permissions":   {Kind: event.ChangePolicy, Setting: "nats.permissions", Policy: &event.PolicyChange{Text: "x"}},
		"budgets":            {Kind: event.ChangePolicy, Setting: "budgets.run_time", Policy: &event.PolicyChange{Text: "x"}},
		"deny rules":         {Kind: event.ChangePolicy, Setting: "policy.deny", Policy: &event.PolicyChange{Text: "x"}},
		"eval rules":         {Kind: event.ChangeStepDefaults, Setting: "improve.rules.min_failures", Defaults: &event.StepDefaults{}},
		"monitor thresholds": {Kind: event.ChangeStepDefaults, Setting: "monitor.threshold", Defaults: &event.StepDefaults{}},
		"unknown setting":    {Kind: event.ChangeStepDefaults, Setting: "executor.default_timeout", Defaults: &event.StepDefaults{}},
		"kind and setting":   {Kind: event.ChangeNotes, Setting: event.SettingDefaultsTimeout, Note: &event.NoteChange{Op: "add", ID: "x", Text: "y"}},
		"two payloads": {Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "add", ID: "x", Text: "y"},
			Defaults: &event.StepDefaults{}},
		"timeout too long": {Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "f", Timeout: event.Duration(48 * time.Hour)}},
		"retries too many": {Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries, Defaults: &event.StepDefaults{Family: "f", Retries: intp(50)}},
		"secret in a note": notes("n-1", "use the token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 to push"),
		"pin of no auto":   {Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: event.NotePin, ID: "n-1", Text: "x"}},
		"bad note op":      {Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: "drop", ID: "n-1"}},
	}
	for name, c := range bad {
		if err := Forbidden(c); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: Forbidden = %v, want ErrForbidden", name, err)
		}
	}
	good := []event.Change{
		notes("n-1", "apt-get install needs -y"),
		{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "f", Timeout: event.Duration(time.Minute)}},
		{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries, Defaults: &event.StepDefaults{Family: "f", Retries: intp(2)}},
		{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: event.NotePin, ID: "auto:apt-get install", Text: "x"}},
	}
	for _, c := range good {
		if err := Forbidden(c); err != nil {
			t.Errorf("Forbidden(%+v) = %v, want nil", c, err)
		}
	}
}

// policyChange makes a policy change of text against version base.
func policyChange(t *testing.T, base int64, text, command string) event.Change {
	t.Helper()
	p, err := policy.Parse([]byte(text), "next")
	if err != nil {
		t.Fatal(err)
	}
	return event.Change{Kind: event.ChangePolicy, Setting: event.SettingPolicy,
		Policy: &event.PolicyChange{Base: base, Text: text, Hash: p.Hash(), Command: command}}
}

// TestCheckPolicyRefuses: a proposed policy that removes or changes a
// rule (a deny rule above all), raises a budget, loosens a level,
// allows what was denied, or adds an allow wider than the one command it
// names, or one of an irreversible, critical or denied command, is
// refused; the remembered rule of a gated command passes.
func TestCheckPolicyRefuses(t *testing.T) {
	cur := loadPolicy(t)
	withRule := func(rule string) string { return testPolicy + rule }
	remember := func(cmd string) string {
		b, err := policy.Remember([]byte(testPolicy), cmd, "", "proposal", "approved 3 times")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := map[string]event.Change{
		"deny rule removed": policyChange(t, 1, strings.Replace(testPolicy, "  - name: mkfs\n    match: {command: [mkfs]}\n    level: high\n    action: deny\n", "", 1), ""),
		"deny rule changed": policyChange(t, 1, strings.Replace(testPolicy, "action: deny", "action: confirm", 1), ""),
		"level loosened":    policyChange(t, 1, strings.Replace(testPolicy, "high: confirm", "high: allow", 1), ""),
		"approvals lowered": policyChange(t, 1, strings.Replace(testPolicy, "high: {approvers: 2}", "high: {approvers: 1}", 1), ""),
		"wide allow": policyChange(t, 1, withRule("  - name: all-restarts\n    pattern: \"systemctl restart\"\n    action: allow\n"),
			"systemctl restart nginx"),
		"allow of the denied":       policyChange(t, 1, withRule("  - name: p\n    pattern: \"mkfs /dev/sdb\"\n    action: allow\n"), "mkfs /dev/sdb"),
		"allow of the irreversible": policyChange(t, 1, remember("git push --force origin main"), "git push --force origin main"),
		"allow of the critical":     policyChange(t, 1, withRule("  - name: p\n    pattern: \"reboot\"\n    action: allow\n"), "reboot"),
		"another base":              policyChange(t, 4, remember("systemctl restart nginx"), "systemctl restart nginx"),
		"hash mismatch": {Kind: event.ChangePolicy, Setting: event.SettingPolicy,
			Policy: &event.PolicyChange{Base: 1, Text: remember("systemctl restart nginx"), Hash: "sha256:0", Command: "systemctl restart nginx"}},
	}
	for name, c := range cases {
		if _, err := CheckPolicy(cur, c, []string{"mkfs /dev/sdb", "systemctl restart nginx", "systemctl restart mysql"}); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: CheckPolicy = %v, want ErrForbidden", name, err)
		}
	}
	// Budgets: a policy with a budget of 10 steps may not go to 20, nor
	// to none.
	budgeted := strings.Replace(testPolicy, "rules:\n", "budgets: {steps: 10}\nrules:\n", 1)
	bp, err := policy.Parse([]byte(budgeted), "budgeted")
	if err != nil {
		t.Fatal(err)
	}
	bp = bp.WithVersion(1)
	for _, steps := range []string{"budgets: {steps: 20}\n", ""} {
		c := policyChange(t, 1, strings.Replace(budgeted, "budgets: {steps: 10}\n", steps, 1), "")
		if _, err := CheckPolicy(bp, c, nil); !errors.Is(err, ErrForbidden) {
			t.Errorf("budget raised to %q: CheckPolicy = %v, want ErrForbidden", steps, err)
		}
	}
	if _, err := CheckPolicy(bp, policyChange(t, 1, strings.Replace(budgeted, "steps: 10", "steps: 5", 1), ""), nil); err != nil {
		t.Errorf("budget lowered: %v", err)
	}
	good := policyChange(t, 1, remember("systemctl restart nginx"), "systemctl restart nginx")
	v, err := CheckPolicy(cur, good, []string{"mkfs /dev/sdb", "systemctl restart nginx", "systemctl restart mysql"})
	if err != nil {
		t.Fatalf("the remembered rule: %v", err)
	}
	if v.Judged != 3 || v.NewAllows != 1 {
		t.Errorf("validation %+v, want 3 judged, 1 newly allowed", v)
	}
}

// TestReplayDefaults counts what the recorded attempts would have done
// under a new default, and refuses a timeout that would fail an attempt
// that passed.
func TestReplayDefaults(t *testing.T) {
	atts := []Attempt{
		{Family: "f", Status: event.TaskSucceeded, Duration: 10 * time.Second},
		{Family: "f", Status: event.TaskSucceeded, Duration: 90 * time.Second},
		{Family: "f", Status: event.TaskFailed, TimedOut: true, Duration: time.Minute},
		{Family: "f", Status: event.TaskFailed, Class: event.ClassTransient, Retryable: true, Attempt: 1},
		{Family: "f", Status: event.TaskSucceeded, SetTimeout: true, Duration: time.Hour},
		{Family: "g", Status: event.TaskSucceeded, Duration: time.Hour},
	}
	timeout := func(d time.Duration) event.Change {
		return event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "f", Timeout: event.Duration(d)}}
	}
	v, err := ReplayDefaults(timeout(4*time.Minute), atts)
	if err != nil || v.Pass != 2 || v.Unknown != 1 || v.Fail != 1 {
		t.Errorf("4m: %+v %v, want 2 pass, 1 unknown, 1 fail", v, err)
	}
	if _, err := ReplayDefaults(timeout(30*time.Second), atts); !errors.Is(err, ErrForbidden) {
		t.Errorf("30s would time out a step that took 90s: err = %v, want ErrForbidden", err)
	}
	retries := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries, Defaults: &event.StepDefaults{Family: "f", Retries: intp(1)}}
	if v, err := ReplayDefaults(retries, atts); err != nil || v.Retry != 1 || v.Pass != 3 || v.Fail != 1 {
		t.Errorf("retries 1: %+v %v, want 3 pass, 1 retried, 1 fail", v, err)
	}
}
