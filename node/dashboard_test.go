package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestDashboardOnTheUINode: a node with the ui role serves the dashboard's
// pages beside the JSON API, read from its own ledger: a finished run's
// page draws its steps, a step's command is shown escaped, the audit links
// every event; GET /api/runs still answers JSON. Stopping the node ends a
// live stream a browser holds open.
func TestDashboardOnTheUINode(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(filepath.Join(t.TempDir(), "node")))
	run := submitGoal(t, n, "dash", "goal: dash\nsteps:\n  - id: first\n    run: \"echo '<script>alert(1)</script>'\"\n  - id: second\n    run: \"true\"\n    depends_on: [first]\n")
	if r := n.WaitRun(t, run, 60*time.Second); r.Status != "succeeded" {
		t.Fatalf("run %s: %s", run, r.Status)
	}
	base := "http://" + n.HTTPAddr()
	get := func(path string) (int, string, http.Header) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for path, want := range map[string]string{
		"/":                                 run[:12],
		"/runs/" + run:                      `data-node="second"`,
		"/runs/" + run + "/steps/first":     "&lt;script&gt;alert(1)&lt;/script&gt;",
		"/audit?run=" + run:                 "plan.accepted",
		"/nodes":                            "test-node",
		"/gates":                            "No gate is open",
		"/events/1":                         "Raw",
		"/audit?type=run.finished&node=zzz": "No event matches",
	} {
		code, body, h := get(path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want %q in:\n%.2000s", path, code, want, body)
		}
		if h.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s: the step's command reached the page unescaped", path)
		}
	}
	if code, body, _ := get("/events/999999"); code != http.StatusNotFound || !strings.Contains(body, "no event 999999") {
		t.Errorf("an event past the head: %d %.500s", code, body)
	}
	code, body, h := get("/api/runs")
	var page api.Page[api.RunSummary]
	if code != http.StatusOK || h.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &page) != nil || len(page.Items) != 1 {
		t.Fatalf("GET /api/runs: %d %q %s", code, h.Get("Content-Type"), body)
	}

	// A browser holds the run's live stream open; the node still stops.
	resp, err := http.Get(base + "/runs/" + run + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the live stream ended before its first frame: %v", err)
		}
		if strings.HasPrefix(line, "event: state") {
			break
		}
	}
	start := time.Now()
	n.Stop(t)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("stopping took %s with a live stream open", d)
	}
}

// TestGateAnsweredFromTheDashboard: an operator signs in to the ui node's
// dashboard with their API token and accepts a gated step from the inbox;
// the step runs once and the ledger holds the node's gate.decided_for
// naming them. A viewer signed in sees no controls and their forged
// answer is refused; nothing runs before the operator's answer.
func TestGateAnsweredFromTheDashboard(t *testing.T) {
	n, run, marker := gatedRun(t)
	base := "http://" + n.HTTPAddr()
	client := newDashClient
	csrfOf := func(c *http.Client, path string) (string, string) { t.Helper(); return dashCSRF(t, c, base+path) }
	login := func(c *http.Client, token string) { t.Helper(); dashLogin(t, c, base, token) }
	var body string
	op := client()
	ot, err := trust.APIToken(n.Operator, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	login(op, ot)
	var subject string
	poll.Eventually(t, 30*time.Second, "the gate in the inbox with its form", func() bool {
		_, body = csrfOf(op, "/gates")
		m := regexp.MustCompile(`name="subject" value="([^"]+)"`).FindStringSubmatch(body)
		if m != nil {
			subject = html.UnescapeString(m[1])
		}
		return m != nil
	})
	answer := url.Values{"run": {run}, "step": {"wipe"}, "subject": {subject}, "action": {"accept"}, "confirm": {"yes"}}

	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := trust.NewIdentity(root, "vera", trust.KindOperator, []string{trust.ViewerRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := trust.APIToken(viewer, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	vc := client()
	login(vc, vt)
	csrf, vbody := csrfOf(vc, "/gates")
	if strings.Contains(vbody, `action="/gates/answer"`) {
		t.Fatal("a viewer's inbox has answer controls")
	}
	answer.Set("csrf", csrf)
	resp, err := vc.PostForm(base+"/gates/answer", answer)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a viewer's forged answer: %d", resp.StatusCode)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the step ran before the operator's answer (%v)", err)
	}

	csrf, _ = csrfOf(op, "/gates")
	answer.Set("csrf", csrf)
	resp, err = op.PostForm(base+"/gates/answer", answer)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Recorded: accept") {
		t.Fatalf("the operator's accept: %d %.500s", resp.StatusCode, b)
	}
	waitFinished(t, n, []string{run})
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q (%v): want the step run once", b, err)
	}
	found := false
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run, Types: []string{string(event.GateDecidedFor)}}) {
		if err != nil {
			t.Fatal(err)
		}
		var d event.GateDecidedForData
		if err := json.Unmarshal(l.Data, &d); err != nil || d.Operator != n.Operator.ID || l.Node != n.Config().Name {
			t.Fatalf("gate.decided_for %s by %s: %+v %v", l.Data, l.Node, d, err)
		}
		found = true
	}
	if !found {
		t.Fatal("no gate.decided_for in the run's audit")
	}
}

func newDashClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

// dashCSRF gets a dashboard page and returns its forms' CSRF token ("" for
// none) and the page.
func dashCSRF(t *testing.T, c *http.Client, u string) (string, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		return "", string(b)
	}
	return m[1], string(b)
}

// dashLogin signs c in to the dashboard at base with an API token.
func dashLogin(t *testing.T, c *http.Client, base, token string) {
	t.Helper()
	csrf, _ := dashCSRF(t, c, base+"/login")
	resp, err := c.PostForm(base+"/login", url.Values{"csrf": {csrf}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/gates" {
		t.Fatalf("sign-in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
}

// TestGateDeniedFromTheDashboard: an operator denies a gated step from the
// inbox with a reason; the step never runs, fails, and so does its run,
// and the run page shows it failed with the reason.
func TestGateDeniedFromTheDashboard(t *testing.T) {
	n, run, marker := gatedRun(t)
	base := "http://" + n.HTTPAddr()
	op := newDashClient()
	ot, err := trust.APIToken(n.Operator, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dashLogin(t, op, base, ot)
	var subject, csrf string
	poll.Eventually(t, 30*time.Second, "the gate in the inbox with its form", func() bool {
		var body string
		csrf, body = dashCSRF(t, op, base+"/gates")
		m := regexp.MustCompile(`name="subject" value="([^"]+)"`).FindStringSubmatch(body)
		if m != nil {
			subject = html.UnescapeString(m[1])
		}
		return m != nil
	})
	resp, err := op.PostForm(base+"/gates/answer", url.Values{"csrf": {csrf}, "run": {run}, "step": {"wipe"}, "subject": {subject},
		"action": {"deny"}, "reason": {"not on a Friday"}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.RawQuery, "recorded=") {
		t.Fatalf("the deny: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	waitFinished(t, n, []string{run})
	r := n.WaitRun(t, run, 10*time.Second)
	if r.Status != event.RunFailed || len(r.Steps) != 1 || r.Steps[0].Status != "failed" || !strings.Contains(r.Steps[0].Error, "not on a Friday") {
		t.Fatalf("run %s: %s, steps %+v", run, r.Status, r.Steps)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("a denied step ran (%v)", err)
	}
	_, page := dashCSRF(t, op, base+"/runs/"+run+"?step=wipe")
	if !strings.Contains(page, `data-node="wipe"`) || !strings.Contains(page, "not on a Friday") || !strings.Contains(page, `node st-failed`) {
		t.Fatalf("the run page does not show the denied step:\n%.3000s", page)
	}
}
