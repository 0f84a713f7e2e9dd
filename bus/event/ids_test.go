package event_test

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// The step id grammar: parts of [A-Za-z0-9_-] joined by single dots, 1 to
// 64 bytes. Every valid id makes a valid, wildcard-free log subject whose
// tail is the id, and is never "." or "..".
func TestValidStepID(t *testing.T) {
	cases := []struct {
		id   string
		want string // "" = valid, else a substring of the error
	}{
		{"build", ""},
		{"a", ""},
		{"s1.2", ""},
		{"a.b.c", ""},
		{"db-migrate_2", ""},
		{"-x", ""},
		{"_", ""},
		{"A9", ""},
		{strings.Repeat("a", 64), ""},
		{"", "step id is empty"},
		{strings.Repeat("a", 65), "is 65 bytes; the limit is 64"},
		{".", "may only separate two parts"},
		{"..", "may only separate two parts"},
		{".a", "may only separate two parts"},
		{"a.", "may only separate two parts"},
		{"a..b", "may only separate two parts"},
		{"a b", "has a space"},
		{"a\tb", "control character"},
		{"a*", `'*' at byte 1`},
		{"*", `'*'`},
		{">", `'>'`},
		{"a.>", `'>'`},
		{"a/b", `'/'`},
		{`a\b`, `'\\'`},
		{"café", "non-ASCII"},
		{"ａ", "non-ASCII"}, // fullwidth a
		{"a\x00", "control character"},
	}
	for _, c := range cases {
		err := event.ValidStepID(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ValidStepID(%q) = %v, want nil", c.id, err)
		case c.want != "" && err == nil:
			t.Errorf("ValidStepID(%q) = nil, want an error with %q", c.id, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("ValidStepID(%q) = %q, want it to say %q", c.id, err, c.want)
		}
		if err == nil {
			checkSubjectTail(t, c.id)
		}
	}
	if err := event.ValidSubgoalID(".."); err == nil || !strings.HasPrefix(err.Error(), "subgoal id") {
		t.Errorf("ValidSubgoalID(..) = %v", err)
	}
}

// checkSubjectTail checks what the grammar promises: id is a sequence of
// non-empty NATS tokens without wildcards, never "." or "..".
func checkSubjectTail(t *testing.T, id string) {
	t.Helper()
	for _, tok := range strings.Split(id, ".") {
		if tok == "" || strings.ContainsAny(tok, "*> \t\r\n/") {
			t.Errorf("valid id %q has a bad subject token %q", id, tok)
		}
	}
	if id == "." || id == ".." {
		t.Errorf("valid id %q is a relative path element", id)
	}
}

func TestValidRunID(t *testing.T) {
	for _, id := range []string{event.NewID(), "r1", "run_2-b", strings.Repeat("x", 64)} {
		if err := event.ValidRunID(id); err != nil {
			t.Errorf("ValidRunID(%q) = %v", id, err)
		}
	}
	for id, want := range map[string]string{
		"":                      "empty",
		"a.b":                   `'.'`,
		".":                     `'.'`,
		"*":                     `'*'`,
		">":                     `'>'`,
		"a b":                   "space",
		"é":                     "non-ASCII",
		strings.Repeat("x", 65): "the limit is 64",
	} {
		if err := event.ValidRunID(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidRunID(%q) = %v, want an error with %q", id, err, want)
		}
	}
}

// Fuzz: ValidStepID accepts exactly the ids of the documented grammar.
func FuzzValidStepID(f *testing.F) {
	for _, s := range []string{"a", "s1.2", ".", "..", "a..b", "a*", "é", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		valid := len(id) >= 1 && len(id) <= event.MaxStepIDLen
		for _, part := range strings.Split(id, ".") {
			if part == "" {
				valid = false
			}
			for _, c := range []byte(part) {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
					valid = false
				}
			}
		}
		if got := event.ValidStepID(id) == nil; got != valid {
			t.Fatalf("ValidStepID(%q) valid = %v, grammar says %v", id, got, valid)
		}
	})
}
