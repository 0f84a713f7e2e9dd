package envelope_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// BenchmarkVerify measures verifying one message of n task.started events
// (the credential cached, as in a follower).
func BenchmarkVerify(b *testing.B) {
	root, err := trust.NewRoot()
	if err != nil {
		b.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 256} {
		drafts := make([]event.Draft, n)
		for i := range drafts {
			drafts[i] = event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: fmt.Sprint("step-", i), Attempt: 1, Node: "exec-1"})
		}
		raw, _, err := envelope.Sign(id, drafts)
		if err != nil {
			b.Fatal(err)
		}
		v := envelope.NewVerifier(root)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := v.Verify(raw, drafts[0].Subject(), time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
