package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// Browser tests drive Debian's chromium (apt-get install chromium), a
// browser of its own per test: a browser that hangs on a loaded machine
// (opening a tab can) then fails one test, not every one after it.
// Without chromium they fail and say how to install it, except under
// -short.
var screenshots = flag.Bool("screenshots", false, "write the dashboard's screenshots into docs/images (make screenshots)")

// screenshotDir is where make screenshots writes, and where the README's
// links point.
var screenshotDir = filepath.Join("..", "..", "..", "docs", "images")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

// chromiumPath finds the browser: $CHROMIUM, then chromium on PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: install it (apt-get install -y chromium; .ci/run does) or set CHROMIUM, or run with -short to leave the browser tests out")
}

// tab opens a new tab of the shared browser.
func tab(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: not with -short")
	}
	path, err := chromiumPath()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1400, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	return ctx
}

// noDialogs fails the test if the page opens an alert: the payloads of
// attacker text all call alert.
func noDialogs(t *testing.T, ctx context.Context) *atomic.Int32 {
	var n atomic.Int32
	err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			n.Add(1)
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				return err
			}))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

// do runs browser actions, failing the test at the first error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i, s := range steps {
		start := time.Now()
		if err := chromedp.Do(ctx, s); err != nil {
			t.Fatalf("action %d: %v", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Logf("action %d took %s", i, d)
		}
	}
}

// eval evaluates a script expression in the page.
func eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// The run page's step nodes change state as steps finish, without a
// reload: the page keeps its document (a marker set on it survives).
func TestBrowserRunPageLive(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`[data-node="diagnose"].st-running`), visible(`#live[data-state="open"]`))
	if got := eval[string](t, ctx, `window.marker = 1; document.querySelector('[data-node="diagnose"] .counts').textContent`); got != "running" {
		t.Fatalf("diagnose shows %q", got)
	}
	l.setStatus(runID, "diagnose", "succeeded")
	l.setStatus(runID, "report", "running")
	do(t, ctx, visible(`[data-node="diagnose"].st-succeeded`), visible(`[data-node="report"].st-running`),
		visible(`#timeline [data-step="diagnose"].st-succeeded`))
	if eval[int](t, ctx, `window.marker`) != 1 {
		t.Fatal("the page was reloaded")
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-node="report"] .counts').textContent`); got != "running" {
		t.Fatalf("report shows %q", got)
	}
}

// Attacker text in a step's command and error shows as text, and no
// script of it runs: no alert, no <img> or javascript: link in the page,
// on the run page, the step opened beside the graph, and the gate inbox.
func TestBrowserRunsNoScript(t *testing.T) {
	ctx := tab(t)
	alerts := noDialogs(t, ctx)
	l := newLedger()
	smallRun(l)
	withAttempts(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: "s", Opened: t0, Spec: &event.Step{ID: "evil", Run: evil},
		Verdict: &event.Verdict{Level: "high", Rule: "r", Why: `<img src=x onerror=alert(8)>`, Highlights: []event.Highlight{{Text: `<script>alert(9)</script>`}}}}}
	srv := newServer(t, l)
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`[data-node="evil"]`),
		chromedp.Click(chromedp.CSS(`[data-node="evil"] rect`)), visible(`#detail .detail[data-step="evil"] .command`))
	if got := eval[string](t, ctx, `document.querySelector('#detail .command').textContent`); got != evil {
		t.Fatalf("the command shows as %q, want the text %q", got, evil)
	}
	if got := eval[string](t, ctx, `document.querySelector('#detail .output').textContent`); got != `<script>alert(10)</script> <img src=x onerror=alert(11)>` {
		t.Fatalf("the output shows as %q", got)
	}
	if got := eval[string](t, ctx, `location.search`); got != "?step=evil" {
		t.Fatalf("the step opened at %q, not beside the graph", got)
	}
	check := func(where string) {
		t.Helper()
		if n := eval[int](t, ctx, `document.querySelectorAll('img, script:not([src]), a[href^="javascript:"]').length`); n != 0 {
			t.Fatalf("%s: %d img, inline script or javascript: link elements", where, n)
		}
	}
	check("run page")
	do(t, ctx, chromedp.Navigate(srv.URL+"/gates"), visible(`table.gates mark`))
	if got := eval[string](t, ctx, `document.querySelector('table.gates mark').textContent`); got != `<script>alert(9)</script>` {
		t.Fatalf("the gate's highlight shows as %q", got)
	}
	check("gates")
	do(t, ctx, chromedp.Sleep(300*time.Millisecond))
	if n := alerts.Load(); n != 0 {
		t.Fatalf("%d alerts ran", n)
	}
}

// The audit page's stream resumes after a cut from the last event it
// had: every event shows once, none is missed.
func TestBrowserAuditReconnects(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l) // seqs 1, 2
	srv := newServer(t, l)
	do(t, ctx, chromedp.Navigate(srv.URL+"/audit"), visible(`#live[data-state="open"]`))
	l.setStatus(runID, "report", "running") // 3
	do(t, ctx, visible(`tr[data-seq="3"]`))
	srv.CloseClientConnections()              // the stream is cut
	l.setStatus(runID, "report", "succeeded") // 4, while it is away
	l.setStatus(runID, "fetch", "succeeded")  // 5
	do(t, ctx, visible(`tr[data-seq="5"]`), visible(`tr[data-seq="4"]`))
	seqs := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#audit-body tr')).map(r => r.dataset.seq)`)
	if want := []string{"5", "4", "3", "2", "1"}; fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", seqs, want)
	}
}

// A 5,000-step run's page opens grouped, with few DOM nodes, and in full
// on request; neither freezes the tab (each loads within the timeout).
func TestBrowserLargeRun(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	plan := event.Plan{Steps: []event.Step{{ID: "setup", Kind: event.KindShell, Run: "make deps"}}}
	steps := []api.Step{{ID: "setup", Kind: event.KindShell, Status: "succeeded"}}
	for i := range 5000 {
		id := fmt.Sprintf("w%d", i)
		plan.Steps = append(plan.Steps, event.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Run: fmt.Sprintf("curl -s https://h/%d", i), DependsOn: []string{"setup"}})
		steps = append(steps, api.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Status: "pending", DependsOn: []string{"setup"}})
	}
	l.addRun(api.RunSummary{ID: runID, Goal: "many", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
	srv := newServer(t, l)
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`#dag .node`), visible(`#live[data-state="open"]`))
	nodes := eval[int](t, ctx, `document.querySelectorAll('#dag .node').length`)
	dom := eval[int](t, ctx, `document.getElementsByTagName('*').length`)
	if nodes > 20 || dom > 2000 {
		t.Fatalf("grouped: %d graph nodes, %d DOM elements", nodes, dom)
	}
	// The page marks when the graph is drawn (make bench reads it).
	if n := eval[int](t, ctx, `performance.getEntriesByName('agentic:dag-drawn').length`); n != 1 {
		t.Fatalf("%d dag-drawn marks, want 1", n)
	}
	l.setStatus(runID, "w4999", "running")
	do(t, ctx, visible(`#dag .node.st-running`),
		chromedp.Navigate(srv.URL+"/runs/"+runID+"?full=1"), visible(`[data-node="w4999"].st-running`))
	if n := eval[int](t, ctx, `document.querySelectorAll('#dag .node').length`); n != 5001 {
		t.Fatalf("in full: %d graph nodes, want 5001", n)
	}
}

// Screenshots of the run page and the gate inbox: written by make
// screenshots, checked to be there otherwise.
func TestBrowserScreenshots(t *testing.T) {
	files := map[string]string{"run": filepath.Join(screenshotDir, "dashboard-run.png"), "gates": filepath.Join(screenshotDir, "dashboard-gates.png")}
	if !*screenshots {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s is missing or not a PNG (%v): make screenshots writes it", f, err)
			}
		}
		return
	}
	ctx := tab(t)
	l := newLedger()
	demoRun(l)
	srv, _ := answeringServer(t, l)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, srv.URL, "op-token")
	for _, name := range []string{"run", "gates"} {
		path := map[string]string{"run": "/runs/" + demoID + "?step=migrate", "gates": "/gates"}[name]
		// The run page is wide enough for the whole graph beside the step.
		width := map[string]int64{"run": 2040, "gates": 1400}[name]
		do(t, ctx, chromedp.EmulateViewport(width, 860), chromedp.Navigate(srv.URL+path), visible(`main`), chromedp.Sleep(500*time.Millisecond))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files[name], png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// signIn signs the tab in with token through the sign-in page.
func signIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(base+"/login"), visible(`form.login textarea`),
		chromedp.SendKeys(chromedp.CSS(`form.login textarea`), token), chromedp.Click(chromedp.CSS(`form.login button`)))
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, visible(`.who`)); err != nil {
		t.Fatalf("not signed in: %v; the page at %s says %.700q", err, eval[string](t, ctx, `location.href`), eval[string](t, ctx, `document.body.innerText`))
	}
}

// An operator signs in, ticks "I confirm" and clicks Accept: the answer is
// recorded once, through the JSON API's path, naming them; a viewer's page
// has no button to click.
func TestBrowserAcceptGate(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: gateSubject, Opened: t0, Spec: &gateSpec,
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm -rf", Why: "deletes"}}}
	srv, em := answeringServer(t, l)
	signIn(t, ctx, srv.URL, "viewer-token")
	do(t, ctx, chromedp.Navigate(srv.URL+"/gates"), visible(`table.gates`))
	if n := eval[int](t, ctx, `document.querySelectorAll('form.answer button').length`); n != 0 {
		t.Fatalf("a viewer's inbox has %d answer buttons", n)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`form.inline button`)), visible(`a[href="/login"]`))
	signIn(t, ctx, srv.URL, "op-token")
	do(t, ctx, chromedp.Navigate(srv.URL+"/gates"), visible(`form.answer`),
		chromedp.Click(chromedp.CSS(`form.answer input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`form.answer button[value="accept"]`)),
		visible(`.flash`))
	if got := eval[string](t, ctx, `document.querySelector('.flash').textContent`); !strings.Contains(got, "Recorded: accept") {
		t.Fatalf("the inbox says %q", got)
	}
	if em.count() != 1 {
		t.Fatalf("%d answers recorded, want 1", em.count())
	}
	var data event.GateDecidedForData
	if err := json.Unmarshal(em.drafts[0].Data, &data); err != nil || data.Operator != "olga" || data.Action != event.GateAccept || data.Subject != gateSubject {
		t.Fatalf("recorded %+v (%v)", data, err)
	}
}

const demoID = "0190b7e4a1c2d3e40000000000000042"

// demoRun is a run worth a screenshot: subgoals, a branch, a gate.
func demoRun(l *ledger) {
	type st struct {
		id, sub, run, status, node string
		deps                       []string
		start, dur                 int
	}
	spec := []st{
		{"checkout", "prepare", "git clone https://git.example.com/shop.git", "succeeded", "exec-1", nil, 0, 4},
		{"deps", "prepare", "npm ci", "succeeded", "exec-2", []string{"checkout"}, 4, 21},
		{"lint", "test", "npm run lint", "succeeded", "exec-1", []string{"deps"}, 25, 9},
		{"unit", "test", "npm test -- --ci", "succeeded", "exec-2", []string{"deps"}, 25, 38},
		{"e2e", "test", "npm run e2e", "failed", "exec-3", []string{"deps"}, 26, 30},
		{"diagnose", "test", "cat test-results/*.log | tail -50", "succeeded", "exec-3", []string{"e2e"}, 57, 3},
		{"build", "release", "docker build -t shop:1.4.2 .", "running", "exec-1", []string{"lint", "unit"}, 64, 0},
		{"migrate", "release", "psql -f migrations/0042_orders.sql && rm -rf /var/cache/shop", "gated", "", []string{"build"}, 0, 0},
		{"deploy", "release", "kubectl rollout restart deploy/shop", "pending", "", []string{"migrate"}, 0, 0},
		{"smoke", "release", "curl -fsS https://shop.example.com/health", "pending", "", []string{"deploy"}, 0, 0},
	}
	plan := event.Plan{Goal: "release shop 1.4.2", Subgoals: []event.Subgoal{{ID: "prepare", Title: "Prepare"}, {ID: "test", Title: "Test"}, {ID: "release", Title: "Release"}}}
	var steps []api.Step
	for _, s := range spec {
		ps := event.Step{ID: s.id, Subgoal: s.sub, Kind: event.KindShell, Run: s.run, DependsOn: s.deps}
		if s.id == "e2e" {
			ps.Next = []event.Branch{{On: event.BranchOnFailure, To: "diagnose"}}
		}
		plan.Steps = append(plan.Steps, ps)
		as := api.Step{ID: s.id, Subgoal: s.sub, Kind: event.KindShell, Status: s.status, Node: s.node, DependsOn: s.deps}
		if s.node != "" {
			as.Attempt = 1
			as.StartedAt = ptime(time.Duration(s.start) * time.Second)
			if s.dur > 0 {
				as.FinishedAt = ptime(time.Duration(s.start+s.dur) * time.Second)
				code := 0
				if s.status == "failed" {
					code = 1
				}
				as.ExitCode = &code
			}
		}
		steps = append(steps, as)
	}
	l.addRun(api.RunSummary{ID: "0190b7e3000000000000000000000041", Goal: "nightly: rebuild the search index", Status: event.RunSucceeded, CreatedAt: t0.Add(-time.Hour)},
		event.Plan{Steps: []event.Step{{ID: "index", Kind: event.KindShell, Run: "make index"}}}, []api.Step{{ID: "index", Kind: event.KindShell, Status: "succeeded"}})
	l.addRun(api.RunSummary{ID: demoID, Goal: "release shop 1.4.2 with the orders migration", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
	// Two gates answered earlier: one through the dashboard, one with
	// agentctl.
	l.change(func() {
		l.appendLine(demoID, event.GateDecidedFor, event.GateDecidedForData{Operator: "alice",
			GateDecidedData: event.GateDecidedData{Step: "deps", Subject: "s1", Action: event.GateAccept, Reason: "lockfile reviewed"}})
		l.appendLine("0190b7e3000000000000000000000041", event.GateDecided, event.GateDecidedData{Step: "index", Subject: "s2", Action: event.GateEdit,
			Command: "make index JOBS=2", Reason: "half the workers at night"})
		l.lines[len(l.lines)-1].Node = "bob"
	})
	l.gates = []api.Gate{{Run: demoID, Goal: "release shop 1.4.2 with the orders migration", Step: "migrate", Attempt: 1, Revision: 1, Kind: event.GatePolicy,
		Subject: "3f9c…", Spec: &plan.Steps[7], Approvals: 1, Submitter: "alice", Opened: t0.Add(64 * time.Second),
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm-rf", Why: "deletes files recursively",
			Highlights: []event.Highlight{{Text: "rm -rf /var/cache/shop"}}}}}
}

// An operator pauses a running run from its page, then cancels it: the
// cancel button shows only once "Cancel…" is opened (a details element, no
// script), and the browser itself will not submit it before "I confirm"
// is ticked. Each is recorded once, naming them.
func TestBrowserPauseAndCancelRun(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	srv, em := answeringServer(t, l)
	signIn(t, ctx, srv.URL, "op-token")
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`.run-actions`),
		chromedp.Click(chromedp.CSS(`.run-actions button[value="pause"]`)), visible(`.flash`))
	if got := eval[string](t, ctx, `document.querySelector('.flash').textContent`); !strings.Contains(got, "Recorded: pause") {
		t.Fatalf("the page says %q", got)
	}
	if em.count() != 1 || em.drafts[0].Type != event.RunPausedFor {
		t.Fatalf("recorded %d events, want one run.paused_for", em.count())
	}
	l.change(func() { l.runs[0].Status = event.RunPaused })
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`.run-actions details.cancel summary`))
	if eval[bool](t, ctx, `document.querySelector('.run-actions button[value="cancel"]').checkVisibility()`) {
		t.Fatal("the cancel button shows before Cancel… is opened")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`.run-actions details.cancel summary`)), visible(`.run-actions button[value="cancel"]`),
		chromedp.Click(chromedp.CSS(`.run-actions button[value="cancel"]`)))
	// The browser's constraint validation refuses the form at the click
	// itself (the box is required); the count at the end, after the
	// confirmed cancel, shows nothing else was sent.
	if eval[bool](t, ctx, `document.querySelector('.run-actions details.cancel input[name="confirm"]').closest('form').checkValidity()`) {
		t.Fatal("the cancel form is valid without its confirmation")
	}
	if em.count() != 1 || eval[string](t, ctx, `location.pathname`) != "/runs/"+runID {
		t.Fatalf("an unconfirmed cancel was submitted (now at %s)", eval[string](t, ctx, `location.pathname`))
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`.run-actions details.cancel input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`.run-actions button[value="cancel"]`)), visible(`.flash`))
	if em.count() != 2 || em.drafts[1].Type != event.RunCancelRequestedFor {
		t.Fatalf("recorded %d events, want a run.cancel_requested_for second", em.count())
	}
	var data event.RunCancelForData
	if err := json.Unmarshal(em.drafts[1].Data, &data); err != nil || data.Operator != "olga" {
		t.Fatalf("recorded %+v (%v)", data, err)
	}
}

// The run's controls follow its live status without a reload: a run paused
// by someone else shows Resume instead of Pause, and a finished one no
// control at all (a stale button would be refused with 409).
func TestBrowserRunActionsFollowStatus(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	srv, _ := answeringServer(t, l)
	signIn(t, ctx, srv.URL, "op-token")
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`.run-actions button[value="pause"]`), visible(`#live[data-state="open"]`))
	if eval[bool](t, ctx, `window.marker = 1; document.querySelector('.run-actions button[value="resume"]').checkVisibility()`) {
		t.Fatal("Resume shows on a running run")
	}
	l.change(func() { l.runs[0].Status = event.RunPaused })
	do(t, ctx, visible(`.run-actions button[value="resume"]`), chromedp.WaitNotVisible(chromedp.CSS(`.run-actions button[value="pause"]`)))
	l.change(func() { l.runs[0].Status = event.RunCancelled })
	do(t, ctx, chromedp.WaitNotVisible(chromedp.CSS(`.run-actions button[value="resume"]`)), chromedp.WaitNotVisible(chromedp.CSS(`.run-actions details.cancel summary`)))
	if eval[int](t, ctx, `window.marker`) != 1 {
		t.Fatal("the page reloaded")
	}
}

// The timeline follows the run without a reload: a step that starts gets a
// new row at the bottom, a running bar grows, a finished one stops — and
// nothing above the new row moves (the graph and the earlier rows keep
// their places).
func TestBrowserTimelineLive(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	do(t, ctx, chromedp.Navigate(srv.URL+"/runs/"+runID), visible(`#timeline [data-step="diagnose"]`), visible(`#live[data-state="open"]`))
	where := `JSON.stringify([document.querySelector('#dag').getBoundingClientRect().top, document.querySelector('#timeline [data-step="fetch"]').getBoundingClientRect().top])`
	before := eval[string](t, ctx, `window.marker = 1; `+where)
	if eval[int](t, ctx, `document.querySelectorAll('#timeline a.tl').length`) != 3 {
		t.Fatal("the timeline does not start with three rows")
	}
	l.change(func() {
		for i, st := range l.steps[runID] {
			switch st.ID {
			case "diagnose":
				l.steps[runID][i].Status, l.steps[runID][i].FinishedAt = "succeeded", ptime(9*time.Second)
			case "report":
				l.steps[runID][i].Status, l.steps[runID][i].Node, l.steps[runID][i].Attempt, l.steps[runID][i].StartedAt = "running", "n2", 1, ptime(9*time.Second)
			}
		}
	})
	do(t, ctx, visible(`#timeline [data-step="report"].st-running rect`), visible(`#timeline [data-step="diagnose"].st-succeeded`))
	if got := eval[string](t, ctx, where); got != before {
		t.Errorf("the page moved: %s, was %s", got, before)
	}
	if got := eval[string](t, ctx, `document.querySelector('#timeline [data-step="report"] .tlnode').textContent`); got != "n2" {
		t.Errorf("the new row's node is %q", got)
	}
	// The running bar grows between frames; the finished one keeps its
	// end (its width shrinks only as the scale grows).
	w0 := eval[float64](t, ctx, `Number(document.querySelector('#timeline [data-step="report"] rect').getAttribute('width'))`)
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](fmt.Sprintf(`Number(document.querySelector('#timeline [data-step="report"] rect').getAttribute('width')) > %v`, w0+2))); err != nil {
		t.Fatalf("the running bar did not grow from %v: %v", w0, err)
	}
	if eval[int](t, ctx, `window.marker`) != 1 {
		t.Fatal("the page reloaded")
	}
}

// A step's panel shows its output live from the logs stream: what it
// wrote so far, then each new chunk, as text (attacker-written output
// runs nothing), and a new attempt's output under a line of its own.
func TestBrowserStepOutputLive(t *testing.T) {
	ctx := tab(t)
	dialogs := noDialogs(t, ctx)
	logs := newLogStream()
	logs.add(runID, "diagnose", 1, "stdout", "compiling\n")
	base := outputServer(t, logs)
	do(t, ctx, chromedp.Navigate(base+"/runs/"+runID+"?step=diagnose"), visible(`#output[data-frames]`))
	if got := eval[string](t, ctx, `document.getElementById('output').textContent`); got != "compiling\n" {
		t.Fatalf("the panel's output is %q", got)
	}
	logs.add(runID, "diagnose", 1, "stderr", `<img src=x onerror=alert(1)><script>alert(2)</script>`+"\n")
	logs.add(runID, "diagnose", 2, "stdout", "second try\n")
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](`document.getElementById('output').textContent.includes('second try')`)); err != nil {
		t.Fatalf("the new output did not arrive: %v; the panel shows %q", err, eval[string](t, ctx, `document.getElementById('output').textContent`))
	}
	got := eval[string](t, ctx, `document.getElementById('output').textContent`)
	if !strings.Contains(got, "<img src=x onerror=alert(1)>") || !strings.Contains(got, "--- attempt 2 ---") {
		t.Fatalf("the panel's output is %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#output img, #output script').length`); n != 0 || dialogs.Load() != 0 {
		t.Fatalf("the output made %d elements and %d dialogs", n, dialogs.Load())
	}
}

// An operator denies a gated step from the inbox: without a reason the
// answer is refused and nothing recorded; with one it is recorded once,
// a deny naming them with their reason.
func TestBrowserDenyGate(t *testing.T) {
	ctx := tab(t)
	l := newLedger()
	smallRun(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: gateSubject, Opened: t0, Spec: &gateSpec,
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm -rf", Why: "deletes"}}}
	srv, em := answeringServer(t, l)
	signIn(t, ctx, srv.URL, "op-token")
	do(t, ctx, chromedp.Navigate(srv.URL+"/gates"), visible(`form.answer`),
		chromedp.Click(chromedp.CSS(`form.answer input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`form.answer button[value="deny"]`)), visible(`.error-page`))
	if got := eval[string](t, ctx, `document.querySelector('.error-page').innerText`); !strings.Contains(got, "400") || !strings.Contains(got, "reason") || em.count() != 0 {
		t.Fatalf("a deny without a reason: %d recorded, the page says %.300q", em.count(), got)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/gates"), visible(`form.answer`),
		chromedp.SendKeys(chromedp.CSS(`form.answer input[name="reason"]`), "not on a Friday"),
		chromedp.Click(chromedp.CSS(`form.answer input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`form.answer button[value="deny"]`)), visible(`.flash`))
	if em.count() != 1 {
		t.Fatalf("%d answers recorded, want 1", em.count())
	}
	var data event.GateDecidedForData
	if err := json.Unmarshal(em.drafts[0].Data, &data); err != nil || data.Operator != "olga" || data.Action != event.GateDeny || data.Reason != "not on a Friday" {
		t.Fatalf("recorded %+v (%v)", data, err)
	}
}
