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
// (the credential cached, as in a follower):
//
//   - remote: a message neither signed nor seen by this process (a
//     message of another node);
//   - local: the first verification of a message this process signed (a
//     node's ledger follower verifying its own outbox's messages);
//   - again: a message verified before (a node's ledger follower and its
//     executor both verify a task.assigned).
func BenchmarkVerify(b *testing.B) {
	root, err := trust.NewRoot()
	if err != nil {
		b.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ n, distinct int }{{1, 1100}, {256, 150}} {
		var subject string
		sign := func(k int) [][]byte {
			msgs := make([][]byte, k)
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
			return msgs
		}
		// Twice as many as the process remembers: the first half is
		// forgotten by the time the loop verifies it, and verifying
		// cycles through more than it remembers.
		remote := sign(2 * c.distinct)[:c.distinct]
		v := envelope.NewVerifier(root)
		b.Run(fmt.Sprintf("events=%d/remote", c.n), func(b *testing.B) {
			b.SetBytes(int64(len(remote[0])))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := v.Verify(remote[i%len(remote)], subject, time.Now()); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("events=%d/local", c.n), func(b *testing.B) {
			b.SetBytes(int64(len(remote[0])))
			b.ReportAllocs()
			var local [][]byte
			for b.Loop() {
				if len(local) == 0 {
					b.StopTimer()
					local = sign(min(c.distinct/4, 100))
					b.StartTimer()
				}
				if _, err := v.Verify(local[0], subject, time.Now()); err != nil {
					b.Fatal(err)
				}
				local = local[1:]
			}
		})
		b.Run(fmt.Sprintf("events=%d/again", c.n), func(b *testing.B) {
			b.SetBytes(int64(len(remote[0])))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(remote[0], subject, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
