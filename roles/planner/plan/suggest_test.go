package plan

import "testing"

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "", 1},
		{"", "abc", 3},
		{"build", "build", 0},
		{"bulid", "build", 1}, // transposition
		{"biuld", "build", 1},
		{"buld", "build", 1},
		{"kitten", "sitting", 3},
		{"abc", "cba", 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	cands := []string{"build", "test", "deploy", "depends_on", "Setup"}
	tests := []struct{ word, want string }{
		{"bulid", "build"},
		{"tset", "test"},
		{"dpeloy", "deploy"},
		{"dependson", "depends_on"},
		{"setup", "Setup"}, // case differs only
		{"zzz", ""},
		{"bxxxd", ""}, // too far for a short word
		{"build", ""}, // itself is no suggestion
	}
	for _, tt := range tests {
		if got := closest(tt.word, cands); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}
