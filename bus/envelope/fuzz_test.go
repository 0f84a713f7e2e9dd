package envelope_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// FuzzVerify: whatever arrives on the bus, Verify never panics, and it
// accepts nothing but what a credential of the root signed.
func FuzzVerify(f *testing.F) {
	root, err := trust.NewRoot()
	if err != nil {
		f.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	d := event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: "a"})
	good, _, err := envelope.Sign(id, []event.Draft{d})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("eyJhbGciOiJub25lIn0.e30."))
	f.Add([]byte("{}"))
	f.Add([]byte(""))
	v := envelope.NewVerifier(root)
	subject := d.Subject()
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, err := v.Verify(raw, subject, time.Now())
		if err != nil {
			if !errors.Is(err, envelope.ErrRejected) {
				t.Fatalf("error not marked ErrRejected: %v", err)
			}
			if r := envelope.AsRejection(err); !r.Code.Valid() || r.Reason == "" {
				t.Fatalf("rejection without a code or reason: %v", err)
			}
			return
		}
		if env.Signer.ID != "exec-1" || len(env.Events) == 0 {
			t.Fatalf("accepted %q as %+v", raw, env)
		}
	})
}
