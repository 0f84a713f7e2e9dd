package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const runID = "0190a3c2d4e5f6a70000000000000001"

// evil is attacker-controlled text: a model writes goals, commands and
// errors.
const evil = `echo "<script>alert(1)</script>" "><img src=x onerror=alert(2)> <a href="javascript:alert(3)">x</a>`

func ptime(d time.Duration) *time.Time { t := t0.Add(d); return &t }
func pint(n int) *int                  { return &n }

// smallRun is a run of four steps: one succeeded, one failed (with
// attacker-controlled command and error), one running, one pending.
func smallRun(l *ledger) {
	plan := event.Plan{Goal: "build <b>it</b>", Subgoals: []event.Subgoal{{ID: "build", Title: "Build <i>all</i>"}}, Steps: []event.Step{
		{ID: "fetch", Subgoal: "build", Kind: event.KindShell, Run: "curl -s https://example.com"},
		{ID: "evil", Subgoal: "build", Kind: event.KindShell, Run: evil, DependsOn: []string{"fetch"},
			Next: []event.Branch{{On: event.BranchOnFailure, To: "diagnose"}}},
		{ID: "diagnose", Kind: event.KindShell, Run: "dmesg | tail", DependsOn: []string{"evil"}},
		{ID: "report", Kind: event.KindNoop, DependsOn: []string{"evil"}},
	}}
	steps := []api.Step{
		{ID: "fetch", Subgoal: "build", Kind: event.KindShell, Status: "succeeded", Attempt: 1, Node: "n1", ExitCode: pint(0), StartedAt: ptime(time.Second), FinishedAt: ptime(3 * time.Second)},
		{ID: "evil", Subgoal: "build", Kind: event.KindShell, Status: "failed", Attempt: 2, Node: "n2", ExitCode: pint(1), DependsOn: []string{"fetch"},
			Error: `<script>alert(4)</script>`, StartedAt: ptime(4 * time.Second), FinishedAt: ptime(6 * time.Second)},
		{ID: "diagnose", Kind: event.KindShell, Status: "running", Attempt: 1, Node: "n1", DependsOn: []string{"evil"}, StartedAt: ptime(7 * time.Second)},
		{ID: "report", Kind: event.KindNoop, Status: "pending", DependsOn: []string{"evil"}},
	}
	l.addRun(api.RunSummary{ID: runID, Goal: `deploy <script>alert(5)</script>`, Status: event.RunRunning, CreatedAt: t0}, plan, steps)
}

// withAttempts records the task.finished of the evil step's two attempts,
// the first with attacker-controlled output.
func withAttempts(l *ledger) {
	l.change(func() {
		l.appendLine(runID, event.TaskFinished, event.TaskFinishedData{Step: "evil", Attempt: 1, Node: "n2", Status: event.TaskFailed, Class: event.ClassLogic,
			ExitCode: 1, Started: t0.Add(4 * time.Second), Duration: event.Duration(time.Second), OutputTail: `<script>alert(10)</script> <img src=x onerror=alert(11)>`})
		l.appendLine(runID, event.TaskFinished, event.TaskFinishedData{Step: "evil", Attempt: 2, Node: "n2", Status: event.TaskFailed, Class: event.ClassLogic,
			ExitCode: 1, Started: t0.Add(5 * time.Second), Duration: event.Duration(time.Second), Error: "exit status 1"})
		l.appendLine(runID, event.TaskFinished, event.TaskFinishedData{Step: "fetch", Attempt: 1, Node: "n1", Status: event.TaskSucceeded, Started: t0.Add(time.Second)})
	})
}

func newServer(t *testing.T, l *ledger) *httptest.Server {
	t.Helper()
	s, err := web.New(l.source(), web.Options{Now: func() time.Time { return t0.Add(10 * time.Second) }, Frame: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		// Streams end with the server: Close waits for them.
		s.Close()
		srv.Close()
	})
	return srv
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// Every page answers, as HTML, with the Content-Security-Policy that
// allows no inline script.
func TestPagesAnswer(t *testing.T) {
	l := newLedger()
	smallRun(l)
	withAttempts(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: "sub-1", Opened: t0,
		Spec: &event.Step{ID: "evil", Run: evil}, Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm-rf", Why: `<script>alert(6)</script>`,
			Highlights: []event.Highlight{{Text: `<img src=x onerror=alert(7)>`}}}}}
	srv := newServer(t, l)
	for path, want := range map[string]string{
		"/":                                 "deploy",
		"/?status=running&goal=deploy":      runID[:12],
		"/runs/" + runID:                    `data-node="evil"`,
		"/runs/" + runID[:8]:                `data-node="fetch"`,
		"/runs/" + runID + "?step=evil":     "Exit code",
		"/runs/" + runID + "?rev=1":         "Plan revisions",
		"/runs/" + runID + "/steps/evil":    "Command",
		"/gates":                            "sub-1",
		"/nodes":                            "v1.2.3",
		"/audit":                            "plan.proposed",
		"/audit?type=plan.accepted&node=n1": "plan.accepted",
		"/events/1":                         "plan.proposed",
		"/runs/" + runID + "/steps/evil?fragment=1": `class="detail"`,
	} {
		code, h, body := get(t, srv.URL+path)
		if code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
			continue
		}
		if h.Get("Content-Security-Policy") != web.CSP || !strings.Contains(web.CSP, "script-src 'self'") || strings.Contains(web.CSP, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, h.Get("Content-Security-Policy"))
		}
		if !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("%s: content type %q", path, h.Get("Content-Type"))
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s: no %q in the page", path, want)
		}
		if strings.Contains(body, "<script>") || regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<]`).MatchString(body) {
			t.Errorf("%s: an inline script", path)
		}
	}
	// A node that is not ready says so (Ready is a *bool: false is not
	// absent).
	if _, _, body := get(t, srv.URL+"/nodes"); !strings.Contains(body, "not ready") {
		t.Error("/nodes: a node that is not ready shows as ready")
	}
	code, h, body := get(t, srv.URL+"/assets/app.js")
	if code != http.StatusOK || !strings.Contains(h.Get("Content-Type"), "javascript") || !strings.Contains(body, "EventSource") {
		t.Errorf("app.js: %d %q", code, h.Get("Content-Type"))
	}
	code, h, body = get(t, srv.URL+"/audit.json?type=plan.proposed")
	var lines []api.AuditLine
	if code != http.StatusOK || json.Unmarshal([]byte(body), &lines) != nil || len(lines) != 1 || lines[0].Type != "plan.proposed" {
		t.Errorf("audit.json: %d %s %q", code, body, h.Get("Content-Type"))
	}
}

// A run still planning has no plan and no step: its page says so, and
// its stream tells it to reload once the plan is accepted.
func TestRunWithoutPlan(t *testing.T) {
	l := newLedger()
	l.change(func() {
		l.runs = append(l.runs, api.RunSummary{ID: runID, Goal: "wait", Status: event.RunPlanning, CreatedAt: t0, StepCounts: map[string]int{}})
	})
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/runs/"+runID)
	if code != http.StatusOK || !strings.Contains(body, "No plan yet") || !strings.Contains(body, "No attempt has started") {
		t.Fatalf("%d %s", code, body)
	}
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live?rev=0", "")
	defer stop()
	next(t, ch, "state")
	l.change(func() {
		l.runs[0].Revision, l.runs[0].Status = 1, event.RunRunning
		l.steps[runID] = []api.Step{{ID: "only", Kind: event.KindNoop, Status: "pending"}}
		l.appendLine(runID, event.PlanProposed, event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{{ID: "only", Kind: event.KindNoop}}}})
	})
	next(t, ch, "resync")
}

// The runs page's stream tells the first page to reload when a new run
// is submitted, and sends the status of the rows it shows.
func TestRunsStreamSeesNewRuns(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	ch, stop := stream(t, srv.URL+"/runs-live", "")
	defer stop()
	if e := next(t, ch, "runs"); !strings.Contains(e.data, runID) {
		t.Fatalf("first frame %s", e.data)
	}
	l.setStatus(runID, "report", "succeeded")
	if e := next(t, ch, "runs"); !strings.Contains(e.data, `"2/4"`) {
		t.Fatalf("after a step succeeded: %s", e.data)
	}
	l.addRun(api.RunSummary{ID: "0190a3c2d4e5f6a70000000000000099", Goal: "new", Status: event.RunSubmitted, CreatedAt: t0.Add(time.Minute)}, event.Plan{}, nil)
	next(t, ch, "resync")
}

// Bad input gets a clear error page with the JSON API's statuses.
func TestPagesRefuseBadInput(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	for path, want := range map[string]int{
		"/runs/nosuchrun":                 http.StatusNotFound,
		"/runs/" + runID + "?rev=9":       http.StatusBadRequest,
		"/runs/" + runID + "?step=ghost":  http.StatusNotFound,
		"/runs/" + runID + "/steps/ghost": http.StatusNotFound,
		"/?status=bogus":                  http.StatusBadRequest,
		"/?since=yesterday":               http.StatusBadRequest,
		"/events/abc":                     http.StatusBadRequest,
		"/events/999":                     http.StatusNotFound,
		"/audit?before=x":                 http.StatusBadRequest,
	} {
		code, h, body := get(t, srv.URL+path)
		if code != want {
			t.Errorf("%s: %d, want %d: %s", path, code, want, body)
		}
		if h.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: an error page without CSP", path)
		}
	}
}

// Attacker-controlled text (goals, commands, errors, gate verdicts, node
// readiness) is shown as text: no tag, handler or javascript: link of it
// reaches the page unescaped.
func TestTextIsEscaped(t *testing.T) {
	l := newLedger()
	smallRun(l)
	withAttempts(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: "s", Opened: t0, Spec: &event.Step{ID: "evil", Run: evil},
		Verdict: &event.Verdict{Level: "high", Why: `<script>alert(6)</script>`, Highlights: []event.Highlight{{Text: `<img src=x onerror=alert(7)>`}}}}}
	srv := newServer(t, l)
	bad := regexp.MustCompile(`(?i)<script|<img|<a href="javascript:|<b>|<i>|onerror=alert\(\d\)>`)
	for _, path := range []string{"/", "/runs/" + runID, "/runs/" + runID + "?step=evil", "/runs/" + runID + "/steps/evil?fragment=1", "/gates", "/nodes", "/events/1"} {
		_, _, body := get(t, srv.URL+path)
		body = regexp.MustCompile(`<script src="/assets/app\.js\?v=[0-9a-f]{12}" defer></script>`).ReplaceAllString(body, "")
		if m := bad.FindString(body); m != "" {
			t.Errorf("%s: %q reached the page unescaped", path, m)
		}
	}
	_, _, body := get(t, srv.URL+"/runs/"+runID+"?step=evil")
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", "javascript:alert(3)", "&lt;script&gt;alert(4)&lt;/script&gt;",
		"&lt;script&gt;alert(10)&lt;/script&gt; &lt;img src=x onerror=alert(11)&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the step's text %q is not shown escaped", want)
		}
	}
}

// The run page of a small run is golden: structure changes show in review.
func TestRunPageGolden(t *testing.T) {
	l := newLedger()
	smallRun(l)
	withAttempts(l)
	srv := newServer(t, l)
	_, _, body := get(t, srv.URL+"/runs/"+runID+"?step=evil")
	// The assets' versions change with every edit of them: not the
	// page's business (TestAssetsVersioned checks them).
	body = regexp.MustCompile(`\?v=[0-9a-f]{12}"`).ReplaceAllString(body, `?v=VERSION"`)
	golden := filepath.Join("testdata", "run.golden.html")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it with go test -run TestRunPageGolden -update)", err)
	}
	if body != string(want) {
		t.Errorf("the run page differs from %s (go test -run TestRunPageGolden -update rewrites it, to be reviewed):\n%s", golden, firstDiff(string(want), body))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}

// A fan-out of 5,000 steps draws as a few grouped nodes with counts, and
// in full on request.
func TestLargeRunIsGrouped(t *testing.T) {
	l := newLedger()
	plan := event.Plan{Steps: []event.Step{{ID: "setup", Kind: event.KindShell, Run: "make deps"}}}
	steps := []api.Step{{ID: "setup", Kind: event.KindShell, Status: "succeeded"}}
	for i := range 5000 {
		id := fmt.Sprintf("w%d", i)
		plan.Steps = append(plan.Steps, event.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Run: fmt.Sprintf("curl -s https://h/%d", i), DependsOn: []string{"setup"}})
		status := "pending"
		if i%10 == 0 {
			status = "succeeded"
		}
		steps = append(steps, api.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Status: status, DependsOn: []string{"setup"}})
	}
	plan.Subgoals = []event.Subgoal{{ID: "work", Title: "fan out"}}
	l.addRun(api.RunSummary{ID: runID, Goal: "many", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/runs/"+runID)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if n := strings.Count(body, `class="node `); n > 20 {
		t.Fatalf("%d nodes drawn for a grouped run", n)
	}
	if !strings.Contains(body, "500 succeeded") || !strings.Contains(body, "4500 pending") {
		t.Fatalf("the group's counts are not shown")
	}
	_, _, full := get(t, srv.URL+"/runs/"+runID+"?full=1")
	if n := strings.Count(full, `class="node `); n != 5001 {
		t.Fatalf("%d nodes drawn in full, want 5001", n)
	}
	// A group node expands that group alone, and its stream draws the same.
	if !strings.Contains(body, `href="/runs/`+runID+`?expand=group%2Fw0"`) {
		t.Fatal("the group node does not link to its expansion")
	}
	_, _, expanded := get(t, srv.URL+"/runs/"+runID+"?expand=group%2Fw0")
	if n := strings.Count(expanded, `class="node `); n != 5001 || !strings.Contains(expanded, `/live?expand=group%2Fw0`) || !strings.Contains(expanded, "group them again") {
		t.Fatalf("expanded: %d nodes drawn, want 5001, and a stream of the same drawing", n)
	}
}

// event is one frame read from a stream.
type sseEvent struct{ id, name, data string }

// readEvents reads a stream's frames into a channel until the body ends.
func readEvents(t *testing.T, body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.name != "" {
					ch <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return ch
}

func stream(t *testing.T, url, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return readEvents(t, resp.Body), func() { cancel(); resp.Body.Close() }
}

func next(t *testing.T, ch <-chan sseEvent, name string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before a %q event", name)
			}
			if e.name == name {
				return e
			}
		case <-timeout:
			t.Fatalf("no %q event in 10s", name)
		}
	}
}

// The run page's stream sends the whole state first, then only the nodes
// that changed; a new plan revision sends resync.
func TestRunStreamSendsDiffs(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live?rev=1", "")
	defer stop()
	var f struct {
		Run   struct{ Status string }
		Nodes map[string]struct {
			S string `json:"s"`
		}
	}
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 4 || f.Nodes["diagnose"].S != "running" || f.Run.Status != "running" {
		t.Fatalf("first frame: %+v", f)
	}
	l.setStatus(runID, "diagnose", "succeeded")
	f.Nodes = nil
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 1 || f.Nodes["diagnose"].S != "succeeded" {
		t.Fatalf("second frame: %+v, want only diagnose succeeded", f.Nodes)
	}
	// A page drawn for another revision is told to reload.
	ch2, stop2 := stream(t, srv.URL+"/runs/"+runID+"/live?rev=2", "")
	defer stop2()
	next(t, ch2, "resync")
	// So is a page drawn before the run had a plan (revision 0).
	ch3, stop3 := stream(t, srv.URL+"/runs/"+runID+"/live?rev=0", "")
	defer stop3()
	next(t, ch3, "resync")
}

// The audit stream sends each new event with its seq as id, and a
// browser reconnecting with Last-Event-ID misses none.
func TestAuditStreamResumes(t *testing.T) {
	l := newLedger()
	smallRun(l) // seqs 1 and 2
	srv := newServer(t, l)
	ch, stop := stream(t, srv.URL+"/audit/live?after=2", "")
	l.setStatus(runID, "report", "running") // 3
	if e := next(t, ch, "audit"); e.id != "3" {
		t.Fatalf("first event id %q, want 3", e.id)
	}
	stop()
	// Events recorded while the browser was away.
	l.setStatus(runID, "report", "succeeded") // 4
	l.setStatus(runID, "fetch", "succeeded")  // 5
	ch, stop = stream(t, srv.URL+"/audit/live?after=2", "3")
	defer stop()
	for _, want := range []string{"4", "5"} {
		if e := next(t, ch, "audit"); e.id != want {
			t.Fatalf("after reconnecting: id %q, want %s", e.id, want)
		}
	}
	// The filters hold in the stream too.
	chf, stopf := stream(t, srv.URL+"/audit/live?after=5&type=step.failed", "")
	defer stopf()
	l.setStatus(runID, "report", "running") // 6, filtered out
	l.setStatus(runID, "report", "failed")  // 7
	if e := next(t, chf, "audit"); e.id != "7" {
		t.Fatalf("filtered stream: id %q, want 7", e.id)
	}
}

// Closing the server ends its streams (no goroutine is left serving a
// browser that never leaves).
func TestCloseEndsStreams(t *testing.T) {
	l := newLedger()
	smallRun(l)
	s, err := web.New(l.source(), web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live", "")
	defer stop()
	next(t, ch, "state")
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the run stream")
	}
	for range ch {
	}
}

// A run replanned draws, live, its current revision's plan: the stream
// reads only as far as that revision's plan.proposed, not the first one.
func TestRunStreamDrawsTheCurrentRevision(t *testing.T) {
	l := newLedger()
	rev1 := event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindNoop}, {ID: "b", Kind: event.KindNoop, DependsOn: []string{"a"}}}}
	l.addRun(api.RunSummary{ID: runID, Goal: "replanned", Status: event.RunRunning, CreatedAt: t0}, rev1,
		[]api.Step{{ID: "a", Kind: event.KindNoop, Status: "succeeded"}, {ID: "b", Kind: event.KindNoop, Status: "failed"}})
	rev2 := event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindNoop}, {ID: "c", Kind: event.KindNoop, DependsOn: []string{"a"}},
		{ID: "d", Kind: event.KindNoop, DependsOn: []string{"c"}}}}
	l.change(func() {
		for range 20 { // events between the two revisions
			l.appendLine(runID, event.TaskFinished, event.TaskFinishedData{Step: "b", Attempt: 1, Status: event.TaskFailed})
		}
		l.appendLine(runID, event.PlanProposed, event.PlanProposedData{Revision: 2, Source: "llm", Plan: rev2})
		l.appendLine(runID, event.PlanAccepted, event.PlanAcceptedData{Revision: 2})
		l.runs[0].Revision, l.runs[0].Steps = 2, 3
		l.steps[runID] = []api.Step{{ID: "a", Kind: event.KindNoop, Status: "succeeded"}, {ID: "c", Kind: event.KindNoop, Status: "running", DependsOn: []string{"a"}},
			{ID: "d", Kind: event.KindNoop, Status: "pending", DependsOn: []string{"c"}}}
	})
	srv := newServer(t, l)
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live?rev=2", "")
	defer stop()
	var f struct {
		Nodes map[string]struct {
			S string `json:"s"`
		}
	}
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 3 || f.Nodes["c"].S != "running" || f.Nodes["d"].S != "pending" {
		t.Fatalf("first frame of revision 2: %+v, want a, c running, d pending", f.Nodes)
	}
}

// The inbox says why a gate holds once: the reason the orchestrator
// gives is the verdict's why for a policy gate, and only a reason of its
// own (a needs-decision gate's lost attempt) is shown beside it.
func TestGateWhyShownOnce(t *testing.T) {
	l := newLedger()
	smallRun(l)
	why := "rm -rf ./scratch: rule recursive-force-delete matches -rf"
	l.gates = []api.Gate{
		{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: "sub-1", Opened: t0, Reason: why,
			Spec: &event.Step{ID: "evil", Run: "rm -rf ./scratch"}, Verdict: &event.Verdict{Action: "confirm", Level: "high", Why: why}},
		{Run: runID, Step: "fetch", Kind: event.GateNeedsDecision, Subject: "sub-2", Opened: t0, Reason: "attempt 1 on n2 may have partly run",
			Spec: &event.Step{ID: "fetch", Run: "curl x"}},
	}
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/gates")
	if code != http.StatusOK {
		t.Fatalf("/gates: %d", code)
	}
	if n := strings.Count(body, why); n != 1 {
		t.Errorf("the policy gate's why is shown %d times, want once", n)
	}
	if n := strings.Count(body, "attempt 1 on n2 may have partly run"); n != 1 {
		t.Errorf("the needs-decision gate's reason is shown %d times, want once", n)
	}
}
