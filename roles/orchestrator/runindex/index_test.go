package runindex

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// appendChunks appends msgs ten messages at a time.
func appendChunks(t *testing.T, st *ledger.Store, msgs []ledger.Message) {
	t.Helper()
	for len(msgs) > 0 {
		n := min(10, len(msgs))
		appendAll(t, st, msgs[:n])
		msgs = msgs[n:]
	}
}

// TestFinishedRunsLeaveMemoryAndStayOnDisk: after runs finish, neither the
// index's state nor an orchestrator state holds them, and Runs, Run and
// Steps still return them — also after a restart, which restores the
// index from its snapshot without folding a record.
func TestFinishedRunsLeaveMemoryAndStayOnDisk(t *testing.T) {
	kit := ledgertest.NewKit(t)
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	x := attach(t, st)
	h := newHistory(t, kit)
	const finished = 20
	for i := range finished {
		id := h.submit(fmt.Sprintf("goal %d", i))
		h.propose(id, 1, linearPlan(3, true, ""))
		h.advance(time.Second)
	}
	h.runToEnd()
	live := h.submit("still going")
	h.propose(live, 1, linearPlan(2, true, ""))
	h.decide() // accept
	h.decide() // assign s0
	appendChunks(t, st, h.msgs)

	if got := slices.Collect(mapsKeys(x.hot.state.Runs)); !slices.Equal(got, []string{live}) {
		t.Errorf("index state holds runs %v, want only %s", got, live)
	}
	if len(x.hot.live) != 1 || len(h.s.Runs) != 1 {
		t.Errorf("index tracks %d live runs, an orchestrator state holds %d; want 1 and 1", len(x.hot.live), len(h.s.Runs))
	}

	check := func(x *Index) {
		t.Helper()
		list := listAll(t, x, Query{})
		want := []string{live}
		for i := finished; i >= 1; i-- {
			want = append(want, fmt.Sprintf("r%d", i))
		}
		if got := ids(list); !slices.Equal(got, want) {
			t.Fatalf("Runs = %v, want %v", got, want)
		}
		s, err := x.Run("r7")
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != event.RunSucceeded || s.Steps != 3 || s.StepCounts[string(core.StepSucceeded)] != 3 ||
			len(s.StepCounts) != 1 || s.FinishedAt == nil || s.Goal != "goal 6" {
			t.Errorf("Run(r7) = %+v", s)
		}
		var steps []StepEntry
		for se, err := range x.Steps("r7", -1) {
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, se)
		}
		if len(steps) != 3 {
			t.Fatalf("Steps(r7) = %+v", steps)
		}
		for i, se := range steps {
			if se.Pos != i || se.View.ID != fmt.Sprintf("s%d", i) || se.View.Status != string(core.StepSucceeded) || se.View.Attempt != 1 {
				t.Errorf("step %d = %+v", i, se)
			}
		}
		ls, err := x.Run(live)
		if err != nil || ls.Status != event.RunRunning || ls.StepCounts[string(core.StepAssigned)] != 1 || ls.StepCounts[string(core.StepPending)] != 1 {
			t.Errorf("Run(%s) = %+v, %v", live, ls, err)
		}
	}
	check(x)
	if node, epoch := x.Leader(); node != "lead" || epoch != 1 {
		t.Errorf("Leader() = %s %d, want lead 1", node, epoch)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	x2 := attach(t, st)
	if x2.hot.folded != 0 {
		t.Errorf("restart folded %d records; want 0 (restored from the snapshot saved at Close)", x2.hot.folded)
	}
	if len(x2.hot.state.Runs) != 1 {
		t.Errorf("restored state holds %d runs, want 1", len(x2.hot.state.Runs))
	}
	if node, epoch := x2.Leader(); node != "lead" || epoch != 1 {
		t.Errorf("Leader() after restart = %s %d, want lead 1", node, epoch)
	}
	check(x2)
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// queryFixture: runs r1..r8, one second apart except r3 and r4 (same
// stream time: ordered by id), with every status.
//
//	r1 succeeded "Build the docs"   r5 cancelled "ship it"
//	r2 failed (plan rejected)       r6 running   "BUILD again"
//	r3 submitted "build"            r7 planned   "deploy"
//	r4 submitted "other"            r8 running   "build last"
func queryFixture(t *testing.T) (*Index, *ledger.Store, *history, time.Time) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	x := attach(t, st)
	h := newHistory(t, kit)
	start := h.now
	r1 := h.submit("Build the docs")
	h.propose(r1, 1, linearPlan(1, false, ""))
	h.runToEnd()
	h.advance(time.Second)
	h.reject(h.submit("fail"))
	h.advance(time.Second)
	h.submit("build")
	h.submit("other")
	h.advance(time.Second)
	r5 := h.submit("ship it")
	h.cancel(r5)
	h.decide()
	h.advance(time.Second)
	h.propose(h.submit("BUILD again"), 1, linearPlan(2, true, ""))
	h.advance(time.Second)
	h.submit("deploy")
	h.advance(time.Second)
	h.propose(h.submit("build last"), 1, linearPlan(1, false, ""))
	h.decide()
	h.propose("r7", 1, linearPlan(2, false, "")) // after the decision: stays planned
	appendChunks(t, st, h.msgs)
	return x, st, h, start
}

func TestRunsQueries(t *testing.T) {
	x, _, _, start := queryFixture(t)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"all, newest first, ties by id", Query{}, "r8 r7 r6 r5 r4 r3 r2 r1"},
		{"status", Query{Status: "running"}, "r8 r6"},
		{"status submitted", Query{Status: "submitted"}, "r4 r3"},
		{"finished statuses", Query{Status: "failed"}, "r2"},
		{"unknown status", Query{Status: "nope"}, ""},
		{"goal ignores case", Query{Goal: "bUiLd"}, "r8 r6 r3 r1"},
		{"goal and status", Query{Goal: "build", Status: "running"}, "r8 r6"},
		{"since", Query{Since: at(4)}, "r8 r7 r6"},
		{"until (exclusive)", Query{Until: at(2)}, "r2 r1"},
		{"since and until", Query{Since: at(2), Until: at(4)}, "r5 r4 r3"},
		{"empty range", Query{Since: at(4), Until: at(2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(ids(listAll(t, x, tt.q)), " "); got != tt.want {
				t.Errorf("Runs(%+v) = %q, want %q", tt.q, got, tt.want)
			}
		})
	}

	// Summaries carry the stream time of the goal.
	all := listAll(t, x, Query{})
	if got := all[len(all)-1].Summary.CreatedAt; !got.Equal(start) {
		t.Errorf("r1 created at %v, want the stream time %v", got, start)
	}
	byID := map[string]Entry{}
	for _, e := range all {
		byID[e.Summary.ID] = e
	}

	// After: older than the cursor; Before: newer, nearest first; both: between.
	for _, tt := range []struct {
		name string
		q    Query
		want string
	}{
		{"after", Query{After: byID["r4"].Cursor}, "r3 r2 r1"},
		{"after a tie", Query{After: byID["r3"].Cursor}, "r2 r1"},
		{"before", Query{Before: byID["r3"].Cursor}, "r4 r5 r6 r7 r8"},
		{"before with status", Query{Before: byID["r1"].Cursor, Status: "submitted"}, "r3 r4"},
		{"between", Query{Before: byID["r2"].Cursor, After: byID["r6"].Cursor}, "r3 r4 r5"},
		{"after with goal", Query{After: byID["r6"].Cursor, Goal: "build"}, "r3 r1"},
	} {
		if got := strings.Join(ids(listAll(t, x, tt.q)), " "); got != tt.want {
			t.Errorf("%s: Runs = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestPagingSeesEveryRunOnce: pages of two, following cursors, return every
// run that existed when paging began exactly once, in order, while new runs
// are submitted between pages.
func TestPagingSeesEveryRunOnce(t *testing.T) {
	x, st, h, _ := queryFixture(t)
	want := ids(listAll(t, x, Query{}))
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		var n int
		for e, err := range x.Runs(Query{After: cursor}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Summary.ID)
			cursor = e.Cursor
			if n++; n == 2 {
				break
			}
		}
		if n < 2 {
			break
		}
		before := len(h.msgs)
		h.advance(time.Second)
		h.submit(fmt.Sprintf("new %d", page))
		appendAll(t, st, h.msgs[before:])
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

// TestGoalFilterEndsWithACheckpoint: a Goal filter reads at most scanBudget
// runs that do not match, then yields a checkpoint whose cursor resumes the
// scan; following checkpoints reaches every match.
func TestGoalFilterEndsWithACheckpoint(t *testing.T) {
	x, _, _, _ := queryFixture(t)
	defer func(b int) { scanBudget = b }(scanBudget)
	scanBudget = 2
	var got []string
	calls := 0
	q := Query{Goal: "docs"} // only r1, the oldest
	for {
		calls++
		var last Entry
		for e, err := range x.Runs(q) {
			if err != nil {
				t.Fatal(err)
			}
			last = e
			if e.Summary != nil {
				got = append(got, e.Summary.ID)
			}
		}
		if last.Cursor == "" || last.Summary != nil {
			break
		}
		q.After = last.Cursor
	}
	if !slices.Equal(got, []string{"r1"}) || calls != 4 {
		t.Errorf("matches %v over %d calls; want [r1] over 4 (7 misses, 2 per call)", got, calls)
	}
}

func TestRunLookup(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	x := attach(t, st)
	h := newHistory(t, kit)
	for range 12 {
		h.submit("g")
	}
	h.submitID("0190abcd-1", "uuid-like")
	appendChunks(t, st, h.msgs)

	for _, tt := range []struct{ in, want string }{
		{"r1", "r1"}, // exact, though r10, r11, r12 share the prefix
		{"r12", "r12"},
		{"0190", "0190abcd-1"},
		{"0190abcd-1", "0190abcd-1"},
	} {
		if s, err := x.Run(tt.in); err != nil || s.ID != tt.want {
			t.Errorf("Run(%q) = %q, %v; want %q", tt.in, s.ID, err, tt.want)
		}
	}
	_, err := x.Run("r")
	var amb *AmbiguousError
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &amb) {
		t.Fatalf("Run(r) = %v, want ErrAmbiguous", err)
	}
	if !slices.Equal(amb.Candidates, []string{"r1", "r10", "r11", "r12", "r2"}) || !amb.More {
		t.Errorf("candidates %v more %v", amb.Candidates, amb.More)
	}
	if want := `runindex: ambiguous run id prefix: "r" matches r1, r10, r11, r12, r2 and more`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if _, err := x.Run("r1"); err != nil {
		t.Error(err)
	}
	_, err = x.Run("r1x")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(r1x) = %v, want ErrNotFound", err)
	}
	if _, err := x.Run(""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(\"\") = %v, want ErrNotFound", err)
	}
}

// TestStepsFollowThePlanRevision: a later revision with fewer steps leaves
// only its own rows; Steps pages by position; unknown runs are errors.
func TestStepsFollowThePlanRevision(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	x := attach(t, st)
	h := newHistory(t, kit)
	id := h.submit("g")
	h.propose(id, 1, linearPlan(5, true, ""))
	h.propose(id, 2, linearPlan(2, true, ""))
	h.decide() // accept
	h.decide() // assign s0
	appendChunks(t, st, h.msgs)

	steps := func(run string, after int) (out []string, err error) {
		for se, err := range x.Steps(run, after) {
			if err != nil {
				return out, err
			}
			out = append(out, fmt.Sprintf("%d:%s:%s", se.Pos, se.View.ID, se.View.Status))
		}
		return out, nil
	}
	for _, tt := range []struct {
		after int
		want  []string
	}{
		{-1, []string{"0:s0:assigned", "1:s1:pending"}},
		{-7, []string{"0:s0:assigned", "1:s1:pending"}},
		{0, []string{"1:s1:pending"}},
		{1, nil},
		{1 << 40, nil},
	} {
		if got, err := steps(id, tt.after); err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Steps(%s, %d) = %v, %v; want %v", id, tt.after, got, err, tt.want)
		}
	}
	if s, _ := x.Run(id); s.Revision != 2 || s.Steps != 2 {
		t.Errorf("summary %+v, want revision 2 with 2 steps", s)
	}
	for _, run := range []string{"nope", "r"} {
		if _, err := steps(run, -1); !errors.Is(err, ErrNotFound) {
			t.Errorf("Steps(%q) = %v, want ErrNotFound", run, err)
		}
	}
}

func TestBadCursors(t *testing.T) {
	x, _, _, _ := queryFixture(t)
	good := listAll(t, x, Query{})[3].Cursor
	if err := ValidCursor(good); err != nil {
		t.Errorf("ValidCursor(%q) = %v", good, err)
	}
	bad := []string{
		"", "!!!", "not a cursor",
		base64.RawURLEncoding.EncodeToString([]byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 'r'}), // unknown version
		base64.RawURLEncoding.EncodeToString([]byte{1, 0, 0, 0}),                     // too short
		base64.StdEncoding.EncodeToString([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 'r'}),    // padded
		strings.Repeat("A", 5000),
	}
	for _, c := range bad {
		if err := ValidCursor(c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("ValidCursor(%.20q) = %v, want ErrBadCursor", c, err)
		}
		if c == "" {
			continue // "" is no cursor in a Query
		}
		for _, q := range []Query{{After: c}, {Before: c}} {
			n := 0
			for _, err := range x.Runs(q) {
				n++
				if !errors.Is(err, ErrBadCursor) {
					t.Errorf("Runs(%.30v) yielded %v, want ErrBadCursor", q, err)
				}
			}
			if n != 1 {
				t.Errorf("Runs with a bad cursor yielded %d times, want one error", n)
			}
		}
	}
}

func TestReadsBeforeAttach(t *testing.T) {
	x := New(nil)
	if _, err := x.Run("r1"); !errors.Is(err, ErrNotAttached) {
		t.Errorf("Run = %v", err)
	}
	for _, err := range x.Runs(Query{}) {
		if !errors.Is(err, ErrNotAttached) {
			t.Errorf("Runs = %v", err)
		}
	}
	for _, err := range x.Steps("r1", -1) {
		if !errors.Is(err, ErrNotAttached) {
			t.Errorf("Steps = %v", err)
		}
	}
	st := ledgertest.Open(t)
	if err := x.Attach(st); err != nil {
		t.Fatal(err)
	}
	if err := x.Attach(st); err == nil {
		t.Error("a second Attach succeeded")
	}
}

// TestFailedCommitStopsTheIndex: once a commit failed, the state holds
// records the ledger does not, so the index refuses to index more.
func TestFailedCommitStopsTheIndex(t *testing.T) {
	x := New(nil)
	rec := ledger.IndexRecord{Event: event.Event{Seq: 1, Type: event.GoalSubmitted, Run: "r1", Data: []byte(`{"goal":"g"}`)}, StreamTime: time.Now()}
	if err := x.Index(&ledger.IndexWriter{}, rec); err != nil {
		t.Fatal(err)
	}
	x.Committed(errors.New("disk full"))
	rec.Event.Run = "r2"
	if err := x.Index(&ledger.IndexWriter{}, rec); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Index after a failed commit = %v, want the commit's error", err)
	}
	if err := x.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Index(&ledger.IndexWriter{}, rec); err != nil {
		t.Errorf("Index after Restore = %v", err)
	}
}

// TestRestoreRefusesDamagedSnapshots: a snapshot that does not decode or
// disagrees with itself is refused (the ledger then rebuilds the index).
func TestRestoreRefusesDamagedSnapshots(t *testing.T) {
	for _, data := range []string{
		`{`,
		`{"version":7}`,
		`{"version":1,"state":{"version":2,"state":{"runs":{"r1":{"id":"r1","status":"submitted"}}}},"created":{}}`,
		`{"version":1,"state":{"version":2,"state":{"runs":{"r1":{"id":"r1","status":"submitted"}}}},"created":{"r2":1}}`,
	} {
		if err := New(nil).Restore([]byte(data)); err == nil {
			t.Errorf("Restore(%s) succeeded", data)
		}
	}
}

// TestNeedsDecisionAndReassignmentsOnDisk: a step whose node failed shows,
// in its row and its run's summary, as held for a decision or given to
// another attempt, with the count of attempts given up; an operator's retry
// and the run's end are written too, and read back after a restart.
func TestNeedsDecisionAndReassignmentsOnDisk(t *testing.T) {
	kit := ledgertest.NewKit(t)
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	x := attach(t, st)
	h := newHistory(t, kit)
	id := h.submit("survive a node")
	h.propose(id, 1, event.Plan{Steps: []event.Step{
		{ID: "once", Kind: event.KindShell, Run: "true"},
		{ID: "again", Kind: event.KindShell, Run: "true", Idempotent: true},
	}})
	h.decide() // accept
	h.decide() // assign both
	for _, a := range h.active() {
		h.start(a)
	}
	h.node(event.NodeFailed, "n1")
	h.node(event.NodeFailed, "n2")
	h.decide() // give both up
	appendChunks(t, st, h.msgs)
	h.msgs = nil

	row := func(x *Index, step string) core.StepView {
		t.Helper()
		for e, err := range x.Steps(id, -1) {
			if err != nil {
				t.Fatal(err)
			}
			if e.View.ID == step {
				return e.View
			}
		}
		t.Fatalf("no row for step %s", step)
		return core.StepView{}
	}
	sum, err := x.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	if sum.StepCounts["needs-decision"] != 1 || sum.StepCounts["ready"] != 1 {
		t.Errorf("summary step counts %v, want one needs-decision and one ready", sum.StepCounts)
	}
	if r := row(x, "once"); r.Status != "needs-decision" || r.Reassigned != 1 || r.Code != "node_lost" || r.Attempt != 1 {
		t.Errorf("row of once: %+v", r)
	}
	if r := row(x, "again"); r.Status != "ready" || r.Reassigned != 1 || r.Code != "node_lost" {
		t.Errorf("row of again: %+v", r)
	}

	h.node(event.NodeJoined, "n1")
	h.node(event.NodeJoined, "n2")
	h.decided(id, "once", event.StepRetry)
	h.runToEnd()
	appendChunks(t, st, h.msgs)
	check := func(x *Index) {
		t.Helper()
		sum, err := x.Run(id)
		if err != nil || sum.Status != event.RunSucceeded {
			t.Fatalf("run %+v %v, want succeeded", sum, err)
		}
		if r := row(x, "once"); r.Status != "succeeded" || r.Attempt != 2 || r.Reassigned != 1 {
			t.Errorf("row of once after the retry: %+v", r)
		}
		if got, want := entries(t, st), model(h.recs); !maps.Equal(got, want) {
			t.Errorf("entries differ from the model:\n%s", diff(got, want))
		}
	}
	check(x)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	check(attach(t, st))
}
