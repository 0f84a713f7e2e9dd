package follow_test

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/fold"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// publishAt signs drafts as signer with its clock at now under version and
// publishes the message.
func publishAt(t *testing.T, js jetstream.JetStream, signer *trust.Identity, now time.Time, version int, drafts ...event.Draft) {
	t.Helper()
	raw, jti, err := envelope.SignAt(signer, drafts, now, version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), drafts[0].Subject(), raw, jetstream.WithMsgID(jti)); err != nil {
		t.Fatal(err)
	}
}

// stateFolder folds into an orchestrator state, the fold the runs view and
// the orchestrator use.
type stateFolder struct {
	mu sync.Mutex
	s  *orchestrator.State
	n  int // records folded
}

func (f *stateFolder) Fold(ev event.Event) { f.mu.Lock(); f.s.Apply(ev); f.n++; f.mu.Unlock() }

func (f *stateFolder) folded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
func (f *stateFolder) Settled(bool) {}
func (f *stateFolder) snapshot(t *testing.T) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// During a rolling upgrade a node of a newer version emits a type this one
// does not know: every ledger records it and the folds skip it, while the
// same type from a signer whose roles may not publish in its category is
// refused with a code. A ledger node that knows only version 0 and one of
// this build end with equal heads.
func TestNewerNodesEventsAreKeptAndSkipped(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	pl := ids.Node(t, "planner-1", event.RolePlanner)
	op := ids.Node(t, "op", event.RoleOperator)
	ctx := context.Background()
	now := time.Now()
	goal := event.MustDraft(event.GoalSubmitted, "r1", event.GoalSubmittedData{Goal: "g", PlanFile: "steps: []"})
	publishAt(t, conn.JS, op, now, 0, goal)
	publishAt(t, conn.JS, ex, now, 1, event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 2, Incarnation: "i"}))
	next := envelope.Version + 1
	publishAt(t, conn.JS, ex, now, next, event.MustDraft("task.progress", "r1", map[string]any{"step": "a", "percent": 50}))
	publishAt(t, conn.JS, pl, now, next, event.MustDraft("task.progress", "r1", map[string]any{"step": "a", "percent": 60}))
	if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "a", Attempt: 1, Node: "exec-1"})); err != nil {
		t.Fatal(err)
	}
	const records = 5

	type node struct {
		st    *ledger.Store
		f     *follow.Follower
		state *stateFolder
	}
	start := func(v *envelope.Verifier) node {
		st, err := ledger.Open(t.TempDir(), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		n := node{st: st, state: &stateFolder{s: orchestrator.NewState()}}
		n.f = follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: v, Folders: []fold.Folder{n.state}})
		if err := n.f.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.f.Stop)
		// The head moves when the ledger commits; the follower counts and
		// folds the records after.
		poll.Eventually(t, 20*time.Second, "the stream folded", func() bool { h, _ := st.Head(); return h == records && n.state.folded() == records })
		return n
	}
	old := start(envelope.NewVerifier(ids.Root, envelope.WithRules(envelope.Versions()[:1])))
	cur := start(envelope.NewVerifier(ids.Root))

	_, hOld := old.st.Head()
	_, hCur := cur.st.Head()
	if hOld != hCur {
		t.Fatalf("heads differ: version-0 node %x, this build %x", hOld, hCur)
	}
	var kept, refused int
	var skipped []event.Event
	for rec, err := range cur.st.Scan(1) {
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Event.Type {
		case "task.progress":
			kept++
			continue
		case event.Rejected:
			var d event.RejectedData
			if err := rec.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.Code != event.RejectRoleNotAllowed || d.Signer != "planner-1" {
				t.Fatalf("rejection %+v, want planner-1's task.progress refused as role_not_allowed", d)
			}
			refused++
		}
		skipped = append(skipped, rec.Event)
	}
	if kept != 1 || refused != 1 {
		t.Fatalf("%d kept, %d refused; want 1 and 1", kept, refused)
	}
	if s := cur.f.Stats(); s.Rejected != 1 || s.Republished != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The folds skipped it: the state equals one folded without it.
	ref := &stateFolder{s: orchestrator.NewState()}
	for _, ev := range skipped {
		ref.Fold(ev)
	}
	ref.s.Seq = records
	if got, want := cur.state.snapshot(t), ref.snapshot(t); !bytes.Equal(got, want) {
		t.Fatalf("folding the unknown type changed the state:\n%s\nwant\n%s", got, want)
	}
	rep, err := old.st.Verify(envelope.NewVerifier(ids.Root))
	if err != nil || !rep.OK || rep.Versions[0] != 1 || rep.Versions[1] != 1 || rep.Versions[envelope.Version] != 1 || rep.Versions[next] != 1 {
		t.Fatalf("verify the version-0 node's ledger with this build: %+v %v", rep, err)
	}
}

// countAbout returns how many records of level about signer were logged.
func countAbout(logs *logrec.Recorder, level slog.Level, signer string) int {
	return logs.Count(func(r logrec.Record) bool { return r.Level == level && r.Attrs["signer"] == signer })
}

// The follower measures each signer's clock skew from its messages' iat
// against the stream timestamps, warns once when a signer passes half the
// leeway (its events still accepted), and logs an error when it passes the
// leeway (its events refused with a code).
func TestClockSkewIsMeasuredAndWarned(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ctx := context.Background()
	signers := map[string]time.Duration{
		"in-step":     0,
		"ahead-20s":   20 * time.Second,
		"behind-20s":  -20 * time.Second,
		"ahead-10m":   10 * time.Minute,
		"behind-10m":  -10 * time.Minute,
		"ahead-10s-a": 10 * time.Second,
	}
	for _, name := range slices.Sorted(maps.Keys(signers)) {
		id := ids.Node(t, name, event.RoleExecutor)
		for range 2 {
			publishAt(t, conn.JS, id, time.Now().Add(signers[name]), envelope.Version, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: name}))
		}
	}
	logs := &logrec.Recorder{}
	st, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: envelope.NewVerifier(ids.Root), Logger: slog.New(logs)})
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	poll.Eventually(t, 20*time.Second, "every message folded", func() bool { return st.AppliedStreamSeq() == uint64(2*len(signers)) })

	skews := f.Skews()
	for name, off := range signers {
		// One-second resolution of iat, plus the time to publish.
		if got := skews[name]; got < off-2*time.Second || got > off+time.Second {
			t.Errorf("%s: measured skew %s, want about %s", name, got, off)
		}
		warns, errs := countAbout(logs, slog.LevelWarn, name), countAbout(logs, slog.LevelError, name)
		abs := off.Abs()
		switch {
		case abs > envelope.Leeway:
			if errs != 1 {
				t.Errorf("%s: %d errors about its clock, want 1", name, errs)
			}
		case abs > envelope.Leeway/2:
			if warns != 1 || errs != 0 {
				t.Errorf("%s: %d warnings and %d errors, want 1 warning (once, though it sent two messages)", name, warns, errs)
			}
		default:
			if warns != 0 || errs != 0 {
				t.Errorf("%s: %d warnings and %d errors, want none", name, warns, errs)
			}
		}
	}
	// Within the leeway accepted, past it refused with the code.
	codes := map[string]event.RejectCode{}
	for rec, err := range st.Scan(1) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Event.Type == event.Rejected {
			var d event.RejectedData
			if err := rec.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			codes[d.Signer] = d.Code
		}
	}
	want := map[string]event.RejectCode{"ahead-10m": event.RejectNotYetValid, "behind-10m": event.RejectExpired}
	if len(codes) != len(want) || codes["ahead-10m"] != want["ahead-10m"] || codes["behind-10m"] != want["behind-10m"] {
		t.Fatalf("rejections by signer %v, want %v", codes, want)
	}
}
