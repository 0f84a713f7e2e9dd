package apiwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMatchID(t *testing.T) {
	ids := []string{"0190aa-1", "0190ab-2", "0190ab-3", "0190ab", "77"}
	tests := []struct {
		prefix, want string
		wantErr      error
	}{
		{"77", "77", nil},
		{"0190aa", "0190aa-1", nil},
		{"0190ab", "0190ab", nil}, // exact wins over being a prefix of others
		{"0190ab-", "", ErrAmbiguous},
		{"0190", "", ErrAmbiguous},
		{"zz", "", ErrNotFound},
		{"", "", ErrBadRequest},
	}
	for _, tt := range tests {
		got, err := MatchID("run", ids, tt.prefix)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("MatchID(%q) = %q, %v; want %q, %v", tt.prefix, got, err, tt.want, tt.wantErr)
		}
		if err != nil && HintOf(err) == "" {
			t.Errorf("MatchID(%q) error has no hint", tt.prefix)
		}
	}
	_, err := MatchID("run", []string{"a1", "a2", "a3"}, "a")
	if want := "api: ambiguous id prefix: \"a\" matches 3 runs:\n  a1\n  a2\n  a3"; err == nil || err.Error() != want {
		t.Errorf("ambiguity = %q; want %q", err, want)
	}
}

// TestAmbiguousIsBounded: however many ids share a prefix, the error
// lists MaxListed of them, one per line, and counts the rest.
func TestAmbiguousIsBounded(t *testing.T) {
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = fmt.Sprintf("0190%04d", i)
	}
	_, err := MatchID("run", ids, "0190")
	lines := strings.Split(err.Error(), "\n")
	if !errors.Is(err, ErrAmbiguous) || len(lines) != MaxListed+2 {
		t.Fatalf("%d lines: %v", len(lines), err)
	}
	if lines[0] != `api: ambiguous id prefix: "0190" matches 5000 runs:` || lines[1] != "  01900000" ||
		lines[MaxListed] != "  01900009" || lines[MaxListed+1] != "  … and 4990 more" {
		t.Errorf("ambiguity =\n%v", err)
	}
	if HintOf(err) != "give more characters of the id" {
		t.Errorf("hint = %q", HintOf(err))
	}
	// A count the lookup did not finish.
	err = Ambiguous("run", "01", []string{"01a", "01b"}, 0)
	if want := "api: ambiguous id prefix: \"01\" matches more than 2 runs:\n  01a\n  01b\n  … and more"; err.Error() != want {
		t.Errorf("open-ended ambiguity = %q; want %q", err, want)
	}
}

func TestHintOf(t *testing.T) {
	base := &HintError{Err: errors.New("x"), Hint: "do y"}
	if HintOf(errors.Join(errors.New("a"), base)) != "do y" {
		t.Error("hint lost in errors.Join")
	}
	if HintOf(errors.New("plain")) != "" || HintOf(nil) != "" || WithHint(nil, "h") != nil {
		t.Error("HintOf invented a hint")
	}
	if HintOf(&RemoteError{Message: "m", Hint: "r"}) != "r" {
		t.Error("remote hint lost")
	}
}

// TestResolveIDSuffix: time-ordered ids of the same minutes share their
// start, so a few characters from the end name one: ResolveID takes the
// only id that starts or ends with the short form, and says which; a
// short form that several share, by start or by end, lists them.
func TestResolveIDSuffix(t *testing.T) {
	ids := []string{
		"01a224fc-3d1e-7a01-8000-00000000a1b2",
		"01a224fc-3d1f-7b02-8000-00000000c3d4",
		"01a224fc-3d20-7c03-8000-00000000e5f6",
		"01a224fc-3d21-7d04-8000-0000000001a2",
	}
	tests := []struct {
		s, want string
		by      MatchedBy
		wantErr error
	}{
		{ids[0], ids[0], MatchedExact, nil},
		{"01a224fc-3d1f", ids[1], MatchedPrefix, nil},
		{"c3d4", ids[1], MatchedSuffix, nil},
		{"e5f6", ids[2], MatchedSuffix, nil},
		{"01a224fc", "", "", ErrAmbiguous},
		{"01a2", "", "", ErrAmbiguous}, // the start of all four, and the end of ids[3]
		{"ffff", "", "", ErrNotFound},
	}
	for _, tt := range tests {
		got, by, err := ResolveID("run", ids, tt.s)
		if got != tt.want || by != tt.by || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("ResolveID(%q) = %q, %q, %v; want %q, %q, %v", tt.s, got, by, err, tt.want, tt.by, tt.wantErr)
		}
	}
	_, _, err := ResolveID("run", ids, "01a2")
	if want := "api: ambiguous id prefix: \"01a2\" matches 4 runs by their start or end:\n  " + strings.Join(ids, "\n  "); err == nil || err.Error() != want {
		t.Errorf("ambiguity = %q; want %q", err, want)
	}
	if h := HintOf(err); h != "give more characters of the start or the end of the id" {
		t.Errorf("hint = %q", h)
	}
}
