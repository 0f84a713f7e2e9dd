package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

func TestKbLsAndShow(t *testing.T) {
	h := newHarness(t).withNode()
	cite := func(host, sha, quote string) event.Citation {
		return event.Citation{SHA256: sha, Quote: quote, URL: "https://" + host + "/p", Host: host}
	}
	h.node.with(func(f *fakeNode) {
		f.facts = []api.Fact{
			{Scope: "kb", Key: runA + "/notes/1", Value: "The service listens on port 8443.", UpdatedAt: time.Now(),
				Refs: &api.Refs{Event: "0190-kb", Seq: 51, Type: "kb.noted", Node: "planner-1", Run: runA, Step: "notes", Attempt: 1},
				Note: &event.KbNotedData{ID: runA + "/notes/1", Step: "notes", Attempt: 1, Question: "Which port?", Critical: true,
					Claim: "The service listens on port 8443.", Confidence: 0.9, Dropped: 1,
					Citations: []event.Citation{cite("docs.example.com", "9f86d0", "listens on port 8443"), cite("wiki.example.org", "603030", "port 8443 (TLS)")}}},
			{Scope: "kb", Key: runA + "/notes/2", Value: "It also speaks gRPC.", UpdatedAt: time.Now(), Quarantined: true,
				Reason: "a critical claim without two independent sources (distinct hosts and content hashes)",
				Note: &event.KbNotedData{ID: runA + "/notes/2", Critical: true, Claim: "It also speaks gRPC.", Confidence: 0.6,
					Citations: []event.Citation{cite("docs.example.com", "9f86d0", "speaks HTTP/2")}}},
			{Scope: "shared", Key: "deploy.region", Value: "eu-west", UpdatedAt: time.Now()},
		}
	})
	r := h.run("kb", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, runA+"/notes/1") || !strings.Contains(r.stdout, "0.90") || strings.Contains(r.stdout, "deploy.region") {
		t.Fatalf("kb ls = %+v", r)
	}
	r = h.run("kb", "ls", "--quarantined", "-o", "json")
	if got := decodeJSON[kbPage](t, r.stdout); r.code != 0 || len(got.Notes) != 1 || got.Notes[0].Key != runA+"/notes/2" || got.Notes[0].Note == nil {
		t.Fatalf("kb ls --quarantined = %+v", r)
	}
	r = h.run("kb", "ls", "--limit", "1", "-o", "json")
	if got := decodeJSON[kbPage](t, r.stdout); r.code != 0 || len(got.Notes) != 1 || got.Next == "" {
		t.Fatalf("kb ls --limit 1 = %+v", r)
	}
	r = h.run("kb", "show", runA+"/notes/1")
	for _, want := range []string{"claim:        The service listens on port 8443.", "confidence:   0.90", "critical:     yes",
		"quarantined:  no", "kb.noted 0190-kb, seq 51, signed by planner-1", "citations (2; 1 dropped", "sha256 9f86d0", `"port 8443 (TLS)"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("kb show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.run("kb", "show", runA+"/notes/2", "-o", "json")
	if got := decodeJSON[api.Fact](t, r.stdout); r.code != 0 || !got.Quarantined || got.Note == nil || len(got.Note.Citations) != 1 {
		t.Fatalf("kb show json = %+v", r)
	}
	if r := h.run("memory", "put", "kb", "forged", "x"); r.code != ExitUsage || !strings.Contains(r.stderr, "research notes") {
		t.Errorf("memory put kb = %+v, want a usage error", r)
	}
	if r := h.run("kb", "ls", "--limit", "1001"); r.code != ExitUsage {
		t.Errorf("kb ls --limit 1001 = %+v, want a usage error", r)
	}
}
