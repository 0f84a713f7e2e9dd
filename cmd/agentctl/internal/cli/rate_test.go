package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// TestRunRate: on a real node, run rate records the operator's run.rated
// for a finished run (named by an id prefix), run show prints the ratings
// oldest first, and -o json carries them; a bad rating and an unknown run
// are clear errors that publish nothing.
func TestRunRate(t *testing.T) {
	h, n := nodeHarness(t)
	id := n.Submit(t, "quick.yaml", "goal: quick\nsteps:\n  - id: one\n    run: 'true'\n")
	poll.Eventually(t, 20*time.Second, "the run succeeded", func() bool {
		s, err := n.API.RunSummary(context.Background(), id)
		return err == nil && s.Status == event.RunSucceeded
	})
	if r := h.run("run", "rate", id[:13], "down", "--reason", "wrong region", "--timeout", "20s"); r.code != 0 || !strings.HasPrefix(r.stdout, "rated run "+id+" down") {
		t.Fatalf("run rate down = %+v", r)
	}
	if r := h.run("run", "rate", id, "up", "--timeout", "20s"); r.code != 0 {
		t.Fatalf("run rate up = %+v", r)
	}
	var show result
	poll.Eventually(t, 10*time.Second, "run show prints both ratings", func() bool {
		show = h.run("run", "show", id)
		return strings.Count(show.stdout, "rated     ") == 2
	})
	down, up := strings.Index(show.stdout, "rated     down by "+n.Operator.ID), strings.Index(show.stdout, "rated     up by "+n.Operator.ID)
	if down < 0 || up < down || !strings.Contains(show.stdout, ": wrong region\n") {
		t.Fatalf("run show:\n%s", show.stdout)
	}
	js := h.run("run", "show", id, "-o", "json")
	var run api.Run
	if err := json.Unmarshal([]byte(js.stdout), &run); err != nil {
		t.Fatalf("run show -o json: %v\n%s", err, js.stdout)
	}
	if len(run.Ratings) != 2 || run.Ratings[0].Rating != event.RatingDown || run.Ratings[0].Reason != "wrong region" ||
		run.Ratings[0].Operator != n.Operator.ID || run.Ratings[1].Rating != event.RatingUp || run.Ratings[0].Seq >= run.Ratings[1].Seq {
		t.Fatalf("ratings = %+v", run.Ratings)
	}
	var ledger []api.AuditLine
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: id}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.RunRated) {
			ledger = append(ledger, l)
		}
	}
	if len(ledger) != 2 || ledger[0].Node != n.Operator.ID ||
		string(ledger[0].Data) != `{"rating":"down","reason":"wrong region","operator":"`+n.Operator.ID+`"}` {
		t.Fatalf("ledger holds %+v", ledger)
	}

	if r := h.run("run", "rate", id, "sideways"); r.code == 0 || !strings.Contains(r.stderr, `"sideways" is not a rating`) || !strings.Contains(r.stderr, "up|down") {
		t.Fatalf("run rate sideways = %+v", r)
	}
	if r := h.run("run", "rate", "ffffffff-0000", "up"); r.code == 0 || !strings.Contains(r.stderr, "nothing was published") || !strings.Contains(r.stderr, "no run matches") {
		t.Fatalf("run rate of an unknown run = %+v", r)
	}
	n2 := 0
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.RunRated) {
			n2++
		}
	}
	if n2 != 2 {
		t.Fatalf("the ledger holds %d ratings after two refused ones, want 2", n2)
	}
}
