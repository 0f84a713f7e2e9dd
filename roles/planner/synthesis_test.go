package planner

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/research"
)

// TestCheckNote: a citation stands only when its source is one of the
// step's (by number or hash) and its quote is in that source's text;
// critical is the question's, raised by the model, never lowered.
func TestCheckNote(t *testing.T) {
	req := event.CritiqueRequestedData{Step: "notes", Attempt: 2, Target: "read",
		Questions: []event.ResearchQuestion{{Q: "Which port?", Critical: true}, {Q: "Which protocol?"}}}
	texts := []research.SourceText{
		{Source: event.ResearchSource{URL: "https://a.example/p", Host: "a.example", SHA256: "aaa"}, Text: "The service listens on port 8443."},
		{Source: event.ResearchSource{URL: "https://b.example/p", Host: "b.example", SHA256: "bbb"}, Text: "It binds port 8443 (TLS)."},
	}
	d, dropped := checkNote("run-1", req, texts, 3, research.Note{Question: 0, Claim: " Port 8443. ", Confidence: 1.5, Critical: false,
		Citations: []research.NoteCite{
			{Source: 0, Quote: "listens on   port 8443"},    // white space differs: kept
			{SHA256: "BBB", Quote: "binds port 8443 (TLS)"}, // by hash, any case
			{Source: 1, Quote: "binds port 9999 (TLS)"},     // not in the source
			{Source: 7, Quote: "listens on port 8443"},      // no such source
			{SHA256: "ccc", Quote: "listens on port 8443"},  // no such hash
			{Source: 0, Quote: "listens on port 8443"},      // the same citation again
		}})
	if d.ID != "run-1/notes/3" || d.Attempt != 2 || d.Research != "read" || d.Claim != "Port 8443." || d.Confidence != 1 ||
		!d.Critical || d.Question != "Which port?" || dropped != 3 || len(d.Citations) != 2 || !d.Independent() {
		t.Fatalf("note = %+v, dropped %d", d, dropped)
	}
	if d.Citations[1].SHA256 != "bbb" || d.Citations[1].Host != "b.example" || d.Citations[1].URL != "https://b.example/p" {
		t.Fatalf("citation by hash = %+v", d.Citations[1])
	}
	d, _ = checkNote("run-1", req, texts, 1, research.Note{Question: 1, Claim: "HTTP", Critical: true,
		Citations: []research.NoteCite{{Source: 0, Quote: strings.Repeat("x", event.MaxQuote+1)}}})
	if !d.Critical || len(d.Citations) != 0 {
		t.Fatalf("a model's critical, or an over-long quote: %+v", d)
	}
}
