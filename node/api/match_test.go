package api

import (
	"errors"
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
	_, err := MatchID("run", []string{"a1", "a2", "a3", "a4"}, "a")
	if err == nil || err.Error() != `api: ambiguous id prefix: "a" matches 4 runs (a1, a2, a3, …)` {
		t.Errorf("long ambiguity = %v", err)
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
