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
// (the credential cached, as in a follower): first, messages the verifier
// has not seen (more than it remembers); again, a message it verified
// before (a node's ledger follower and executor both verify a message).
func BenchmarkVerify(b *testing.B) {
	root, err := trust.NewRoot()
	if err != nil {
		b.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ n, distinct int }{{1, 1100}, {256, 300}} {
		msgs := make([][]byte, c.distinct)
		var subject string
		for m := range msgs {
			drafts := make([]event.Draft, c.n)
			for i := range drafts {
				drafts[i] = event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: fmt.Sprint("step-", i), Attempt: 1, Node: "exec-1"})
			}
			if msgs[m], _, err = envelope.Sign(id, drafts); err != nil {
				b.Fatal(err)
			}
			subject = drafts[0].Subject()
		}
		v := envelope.NewVerifier(root)
		b.Run(fmt.Sprintf("events=%d/first", c.n), func(b *testing.B) {
			b.SetBytes(int64(len(msgs[0])))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := v.Verify(msgs[i%len(msgs)], subject, time.Now()); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("events=%d/again", c.n), func(b *testing.B) {
			b.SetBytes(int64(len(msgs[0])))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(msgs[0], subject, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
