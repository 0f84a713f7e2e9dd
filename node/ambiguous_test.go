package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestAmbiguousRunPrefixListsCandidates: a prefix several runs share gets
// an error naming them one per line, and a memory scope that is neither
// "shared" nor a run id is a bad request.
func TestAmbiguousRunPrefixListsCandidates(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	a := n.Submit(t, "a.yaml", onePlan)
	b := n.Submit(t, "b.yaml", onePlan)
	n.WaitRun(t, a, 30*time.Second)
	n.WaitRun(t, b, 30*time.Second)
	ctx := context.Background()
	// UUIDv7 ids made seconds apart share their first characters.
	prefix := a[:4]
	if !strings.HasPrefix(b, prefix) {
		t.Fatalf("runs %s and %s share no 4-character prefix", a, b)
	}
	_, err := n.API.RunsGet(ctx, prefix)
	if !errors.Is(err, api.ErrAmbiguous) || api.HintOf(err) != "give more characters of the id" {
		t.Fatalf("runs.get %s = %v (hint %q), want ErrAmbiguous", prefix, err, api.HintOf(err))
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], `"`+prefix+`" matches 2 runs:`) {
		t.Fatalf("ambiguity error =\n%v", err)
	}
	for _, id := range []string{a, b} {
		if lines[1] != "  "+id && lines[2] != "  "+id {
			t.Errorf("run %s is not listed on a line of its own:\n%v", id, err)
		}
	}

	if _, err := n.API.MemoryGet(ctx, "not a run", "k"); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), `is neither "shared" nor a run id`) {
		t.Errorf("memory.get with a bad scope = %v, want a bad request", err)
	}
}
