package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve"
)

// TestProposalShowDraftedBy: proposal show says who drafted a proposal's
// text and change, the model's risk note, and why a draft was not used;
// a proposal of a node with no model says nothing of it.
func TestProposalShowDraftedBy(t *testing.T) {
	p := &improve.Proposal{}
	p.ID, p.Pattern, p.Risk = "p-1", improve.PatternTimeouts, "medium"
	p.History = []improve.Transition{{Status: improve.StatusPending}}
	var plain bytes.Buffer
	renderProposal(&plain, p)
	if strings.Contains(plain.String(), "drafted by") {
		t.Errorf("a proposal of no model says who drafted it:\n%s", plain.String())
	}
	p.DraftedBy, p.ChangeBy, p.RiskNote = event.DraftedByModel, event.DraftedByRules, "a hung fetch holds its executor"
	p.DraftNote = "the model's change was dropped, the rule's kept: forbidden"
	var b bytes.Buffer
	renderProposal(&b, p)
	for _, want := range []string{"drafted by model (text), rules (change)", "risk note  a hung fetch holds its executor", "draft note the model's change was dropped"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("proposal show lacks %q:\n%s", want, b.String())
		}
	}
}
