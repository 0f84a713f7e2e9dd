package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/ui"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// emitted records what the ui node would sign.
type emitted struct {
	mu     sync.Mutex
	drafts []event.Draft
}

func (e *emitted) Emit(_ context.Context, ds ...event.Draft) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drafts = append(e.drafts, ds...)
	return nil
}

func (e *emitted) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.drafts)
}

var _ roles.Emitter = (*emitted)(nil)

// gateSpec is the gated step, and gateSubject its gate's subject as the
// orchestrator computes it (what a ui node that binds answers checks).
var (
	gateSpec    = event.Step{ID: "evil", Kind: event.KindShell, Run: "rm -rf ./build"}
	gateSubject = event.GateSubject(gateSpec, event.PolicyRef{})
)

// operators are the tokens the tests sign in with.
func operators(tok string) (string, []string, error) {
	switch tok {
	case "op-token":
		return "olga", []string{event.RoleOperator}, nil
	case "viewer-token":
		return "vera", []string{"viewer"}, nil
	}
	return "", nil, errors.New("the token is not signed by this cluster's root")
}

// gatedServer serves a dashboard whose gate answers go through the JSON
// API's own path (ui.UI.AnswerGate) to a recording emitter.
func gatedServer(t *testing.T) (*httptest.Server, *emitted) {
	t.Helper()
	l := newLedger()
	smallRun(l)
	l.gates = []api.Gate{{Run: runID, Step: "evil", Kind: event.GatePolicy, Subject: gateSubject, Opened: t0, Spec: &gateSpec,
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm -rf", Why: "deletes"}}}
	return answeringServer(t, l)
}

// answeringServer serves l's dashboard with sign-in and gate answers.
func answeringServer(t *testing.T, l *ledger) (*httptest.Server, *emitted) {
	t.Helper()
	em := &emitted{}
	u := ui.New(l).WithGates(ui.Gates{List: l.Gates, Emit: em, Operator: operators})
	src := l.source()
	src.Operator, src.Answer = operators, u.AnswerGate
	src.Brake = func(ctx context.Context, token, run, action, reason string) (int, any) {
		return u.BrakeRun(ctx, token, run, ui.Brake(action), reason)
	}
	s, err := web.New(src, web.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	u.Register(mux)
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })
	return srv, em
}

// browser is an HTTP client with cookies that does not follow redirects.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) csrf(path string) string {
	b.t.Helper()
	_, body, _ := b.do(http.MethodGet, path, nil, nil)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("%s has no CSRF field", path)
	}
	return m[1]
}

func (b *browser) login(token string) int {
	b.t.Helper()
	code, _, _ := b.do(http.MethodPost, "/login", url.Values{"csrf": {b.csrf("/login")}, "token": {token}}, nil)
	return code
}

// Until it signs in a browser sees the inbox without controls; a bad
// token, or a sign-in form without its CSRF token, is refused; the
// session cookie is HttpOnly and SameSite=Strict.
func TestSignIn(t *testing.T) {
	srv, _ := gatedServer(t)
	b := newBrowser(t, srv.URL)
	code, body, _ := b.do(http.MethodGet, "/gates", nil, nil)
	if code != http.StatusOK || strings.Contains(body, `action="/gates/answer"`) || !strings.Contains(body, "sign in") {
		t.Fatalf("anonymous inbox: %d, controls shown or no sign-in hint", code)
	}
	if code := b.login("forged"); code != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d", code)
	}
	if code, _, _ := b.do(http.MethodPost, "/login", url.Values{"token": {"op-token"}}, nil); code != http.StatusForbidden {
		t.Fatalf("sign-in without the CSRF token: %d", code)
	}
	code, _, h := b.do(http.MethodPost, "/login", url.Values{"csrf": {b.csrf("/login")}, "token": {"op-token"}}, nil)
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || !strings.Contains(cookie, "Max-Age=3600") {
		t.Fatalf("sign-in: %d, cookie %q", code, cookie)
	}
	_, body, _ = b.do(http.MethodGet, "/gates", nil, nil)
	if !strings.Contains(body, `action="/gates/answer"`) || !strings.Contains(body, "olga") {
		t.Fatal("a signed-in operator sees no controls")
	}
	// Signing out ends it.
	b.do(http.MethodPost, "/logout", url.Values{"csrf": {b.csrf("/gates")}}, nil)
	if _, body, _ = b.do(http.MethodGet, "/gates", nil, nil); strings.Contains(body, `action="/gates/answer"`) {
		t.Fatal("controls after signing out")
	}
}

// An operator's answer from the inbox is the JSON API's: signed for them,
// once; without the form's CSRF token, from another site, unconfirmed or
// incomplete, nothing is recorded.
func TestAnswerFromTheInbox(t *testing.T) {
	srv, em := gatedServer(t)
	b := newBrowser(t, srv.URL)
	if code := b.login("op-token"); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	csrf := b.csrf("/gates")
	form := func(action, reason string) url.Values {
		return url.Values{"csrf": {csrf}, "run": {runID}, "step": {"evil"}, "subject": {gateSubject}, "action": {action}, "reason": {reason}, "confirm": {"yes"}}
	}
	for name, c := range map[string]struct {
		form   url.Values
		header map[string]string
		want   int
	}{
		"no csrf":      {url.Values{"run": {runID}, "step": {"evil"}, "subject": {gateSubject}, "action": {"accept"}, "confirm": {"yes"}}, nil, http.StatusForbidden},
		"wrong csrf":   {func() url.Values { f := form("accept", ""); f.Set("csrf", strings.Repeat("x", 43)); return f }(), nil, http.StatusForbidden},
		"other origin": {form("accept", ""), map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		"cross-site":   {form("accept", ""), map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		"unconfirmed":  {func() url.Values { f := form("accept", ""); f.Del("confirm"); return f }(), nil, http.StatusBadRequest},
		"deny, no why": {form("deny", ""), nil, http.StatusBadRequest},
		"bad action":   {form("approve-all", ""), nil, http.StatusBadRequest},
	} {
		if code, body, _ := b.do(http.MethodPost, "/gates/answer", c.form, c.header); code != c.want {
			t.Errorf("%s: %d, want %d: %.300s", name, code, c.want, body)
		}
	}
	if n := em.count(); n != 0 {
		t.Fatalf("%d answers recorded by refused requests", n)
	}
	code, _, h := b.do(http.MethodPost, "/gates/answer", form("accept", ""), map[string]string{"Origin": srv.URL})
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "recorded=") {
		t.Fatalf("accept: %d %q", code, h.Get("Location"))
	}
	if em.count() != 1 {
		t.Fatalf("%d answers recorded, want 1", em.count())
	}
	d := em.drafts[0]
	var data event.GateDecidedForData
	if err := json.Unmarshal(d.Data, &data); err != nil {
		t.Fatal(err)
	}
	if d.Type != event.GateDecidedFor || d.Run != runID || data.Operator != "olga" || data.Step != "evil" || data.Subject != gateSubject || data.Action != event.GateAccept {
		t.Fatalf("recorded %s %+v", d.Type, data)
	}
	_, body, _ := b.do(http.MethodGet, h.Get("Location"), nil, nil)
	if !strings.Contains(body, "Recorded: accept") {
		t.Fatal("the inbox does not say the answer was recorded")
	}
}

// A viewer signs in and sees everything, with no controls; a forged
// answer with a valid CSRF token is refused by the API's own check.
func TestViewerAnswersNothing(t *testing.T) {
	srv, em := gatedServer(t)
	b := newBrowser(t, srv.URL)
	if code := b.login("viewer-token"); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	_, body, _ := b.do(http.MethodGet, "/gates", nil, nil)
	if strings.Contains(body, `action="/gates/answer"`) || !strings.Contains(body, gateSubject) || !strings.Contains(body, "viewer") {
		t.Fatal("a viewer's inbox shows controls, or hides the gate")
	}
	code, body, _ := b.do(http.MethodPost, "/gates/answer", url.Values{"csrf": {b.csrf("/gates")}, "run": {runID}, "step": {"evil"},
		"subject": {gateSubject}, "action": {"accept"}, "confirm": {"yes"}}, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "may not answer gates") {
		t.Fatalf("a viewer's forged answer: %d %.300s", code, body)
	}
	if em.count() != 0 {
		t.Fatal("a viewer's answer was recorded")
	}
	// Without a session at all: 401.
	anon := newBrowser(t, srv.URL)
	if code, _, _ := anon.do(http.MethodPost, "/gates/answer", url.Values{"csrf": {anon.csrf("/login")}, "run": {runID}, "subject": {"s"}, "action": {"accept"}, "confirm": {"yes"}}, nil); code != http.StatusUnauthorized {
		t.Fatalf("an anonymous answer: %d", code)
	}
}

// A session whose token's credential is revoked ends at the next request,
// which is refused (403) rather than served as the operator's or as an
// anonymous browser's; the request after it is a read-only browser's.
func TestRevokedSessionRefused(t *testing.T) {
	l := newLedger()
	smallRun(l)
	var revoked atomic.Bool
	src := l.source()
	src.Operator = func(tok string) (string, []string, error) {
		if revoked.Load() {
			return "", nil, fmt.Errorf("%w: operator \"olga\": credential revoked", ui.ErrOperatorRefused)
		}
		return operators(tok)
	}
	src.Refused = func(err error) bool { return errors.Is(err, ui.ErrOperatorRefused) }
	src.Answer = func(context.Context, string, io.Reader) (int, any) { return http.StatusAccepted, map[string]string{} }
	s, err := web.New(src, web.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })
	b := newBrowser(t, srv.URL)
	if code := b.login("op-token"); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	if _, body, _ := b.do(http.MethodGet, "/runs/"+runID, nil, nil); !strings.Contains(body, "olga") {
		t.Fatal("the signed-in operator is not shown")
	}
	revoked.Store(true)
	code, body, h := b.do(http.MethodGet, "/runs/"+runID, nil, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "revoked") || !strings.Contains(h.Get("Set-Cookie"), web.SessionCookie+"=;") {
		t.Fatalf("the request after the revocation: %d, cookie %q: %.400s", code, h.Get("Set-Cookie"), body)
	}
	code, body, _ = b.do(http.MethodGet, "/runs/"+runID, nil, nil)
	if code != http.StatusOK || strings.Contains(body, "olga") {
		t.Fatalf("the next request: %d, still signed in: %v", code, strings.Contains(body, "olga"))
	}
}
