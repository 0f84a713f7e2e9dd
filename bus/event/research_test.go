package event_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestGateSubjectCoversSources: a research step's sources are what the
// policy judges, so two steps alike but for their sources have distinct
// gate subjects (an approval or a memoized verdict of one is not the
// other's).
func TestGateSubjectCoversSources(t *testing.T) {
	ref := event.PolicyRef{Version: 1, Hash: "h"}
	a := event.Step{ID: "read", Kind: event.KindResearch, Sources: []string{"https://docs.example.com/a"}}
	b := a
	b.Sources = []string{"https://docs.example.com/a", "http://blocked.example:8080/x"}
	if event.GateSubject(a, ref) == event.GateSubject(b, ref) {
		t.Fatal("two research steps with different sources share a gate subject")
	}
}

func TestSourceHostPort(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"https://Docs.Example.com/a", "docs.example.com:443"},
		{"http://example.org/a", "example.org:80"},
		{"http://127.0.0.1:8080/x", "127.0.0.1:8080"},
		{"http://[::1]:9/x", "[::1]:9"},
	} {
		if got, err := event.SourceHostPort(c.url); err != nil || got != c.want {
			t.Errorf("SourceHostPort(%q) = %q, %v; want %q", c.url, got, err, c.want)
		}
	}
	for _, bad := range []string{"ftp://example.org/x", "file:///etc/passwd", "https://user:pw@example.org/", "/relative", "http:///nohost"} {
		if _, err := event.SourceHostPort(bad); err == nil {
			t.Errorf("SourceHostPort(%q) accepted", bad)
		}
	}
}
