package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

const (
	pauseForm  = `action="/runs/` + runID + `/pause"`
	resumeForm = `action="/runs/` + runID + `/resume"`
	cancelForm = `action="/runs/` + runID + `/cancel"`
)

// The run page shows a signed-in operator the actions the run's status
// allows (Pause and Cancel while running, Resume and Cancel while paused,
// none once final), and shows none to a viewer or an anonymous browser.
func TestRunActionsByRole(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv, _ := answeringServer(t, l)
	page := "/runs/" + runID

	anon := newBrowser(t, srv.URL)
	viewer := newBrowser(t, srv.URL)
	if code := viewer.login("viewer-token"); code != http.StatusSeeOther {
		t.Fatalf("viewer sign-in: %d", code)
	}
	op := newBrowser(t, srv.URL)
	if code := op.login("op-token"); code != http.StatusSeeOther {
		t.Fatalf("operator sign-in: %d", code)
	}
	for name, b := range map[string]*browser{"anonymous": anon, "viewer": viewer} {
		code, body, _ := b.do(http.MethodGet, page, nil, nil)
		if code != http.StatusOK || strings.Contains(body, "/pause\"") || strings.Contains(body, "/resume\"") || strings.Contains(body, "/cancel\"") {
			t.Fatalf("%s: %d, or the page shows run controls", name, code)
		}
	}
	shows := func(status event.RunStatus, want ...string) {
		t.Helper()
		l.change(func() { l.runs[0].Status = status })
		_, body, _ := op.do(http.MethodGet, page, nil, nil)
		for _, f := range []string{pauseForm, resumeForm, cancelForm} {
			if has, wanted := shown(body, f), strings.Contains(strings.Join(want, " "), f); has != wanted {
				t.Errorf("%s run: form %s shown %v, want %v", status, f, has, wanted)
			}
		}
		if strings.Contains(body, "onclick") || strings.Contains(body, "<script>") {
			t.Errorf("%s run: inline script on the page", status)
		}
	}
	shows(event.RunRunning, pauseForm, cancelForm)
	shows(event.RunPaused, resumeForm, cancelForm)
	shows(event.RunPlanning, cancelForm)
	shows(event.RunSucceeded)
	shows(event.RunCancelled)
}

// shown reports whether the page's form with action attribute form is
// drawn and not hidden (its tag, or its details element's, has no hidden
// attribute).
func shown(body, form string) bool {
	i := strings.Index(body, form)
	if i < 0 {
		return false
	}
	hidden := func(from int) bool {
		tag := body[from:]
		return strings.Contains(tag[:strings.Index(tag, ">")], " hidden")
	}
	if hidden(strings.LastIndex(body[:i], "<")) {
		return false
	}
	// The cancel form sits in a details element that may hide it.
	if d := strings.LastIndex(body[:i], "<details"); d >= 0 && strings.LastIndex(body[:i], "</details>") < d {
		return !hidden(d)
	}
	return true
}

// An operator's pause, resume and cancel from the page are the JSON API's:
// signed for them, once each; without the form's CSRF token, from another
// site, unconfirmed (cancel), or not allowed by the run's status, nothing
// is recorded.
func TestRunActionsFromThePage(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv, em := answeringServer(t, l)
	b := newBrowser(t, srv.URL)
	if code := b.login("op-token"); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	csrf := b.csrf("/runs/" + runID)
	form := func(extra ...string) url.Values {
		f := url.Values{"csrf": {csrf}, "reason": {"checking <b>db</b>"}}
		for i := 0; i+1 < len(extra); i += 2 {
			f.Set(extra[i], extra[i+1])
		}
		return f
	}
	for name, c := range map[string]struct {
		path   string
		form   url.Values
		header map[string]string
		want   int
	}{
		"no csrf":            {"pause", url.Values{"reason": {"x"}}, nil, http.StatusForbidden},
		"wrong csrf":         {"pause", form("csrf", strings.Repeat("x", 43)), nil, http.StatusForbidden},
		"other origin":       {"pause", form(), map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		"cross-site":         {"cancel", form("confirm", "yes"), map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		"cancel unconfirmed": {"cancel", form(), nil, http.StatusBadRequest},
		"resume running":     {"resume", form(), nil, http.StatusConflict},
		"no such action":     {"delete", form(), nil, http.StatusBadRequest},
	} {
		if code, body, _ := b.do(http.MethodPost, "/runs/"+runID+"/"+c.path, c.form, c.header); code != c.want {
			t.Errorf("%s: %d, want %d: %.300s", name, code, c.want, body)
		}
	}
	if code, _, _ := b.do(http.MethodPost, "/runs/0190ffffffffffff0000000000000000/pause", form(), nil); code != http.StatusNotFound {
		t.Errorf("an unknown run: %d, want 404", code)
	}
	if n := em.count(); n != 0 {
		t.Fatalf("%d actions recorded by refused requests", n)
	}

	act := func(action string, status event.RunStatus, typ event.Type, extra ...string) {
		t.Helper()
		n := em.count()
		code, _, h := b.do(http.MethodPost, "/runs/"+runID[:12]+"/"+action, form(extra...), map[string]string{"Origin": srv.URL})
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/runs/"+runID+"?acted="+action) {
			t.Fatalf("%s: %d %q", action, code, h.Get("Location"))
		}
		if em.count() != n+1 {
			t.Fatalf("%s: %d events recorded, want 1", action, em.count()-n)
		}
		d := em.drafts[n]
		var data struct {
			Operator, Reason string
		}
		if err := json.Unmarshal(d.Data, &data); err != nil {
			t.Fatal(err)
		}
		if d.Type != typ || d.Run != runID || data.Operator != "olga" || data.Reason != "checking <b>db</b>" {
			t.Fatalf("%s recorded %s for %s: %+v", action, d.Type, d.Run, data)
		}
		_, body, _ := b.do(http.MethodGet, h.Get("Location"), nil, nil)
		if !strings.Contains(body, "Recorded: "+action) || !strings.Contains(body, d.ID) {
			t.Fatalf("%s: the page does not say it was recorded", action)
		}
		l.change(func() { l.runs[0].Status = status }) // as the orchestrator folds it
	}
	act("pause", event.RunPaused, event.RunPausedFor)
	act("resume", event.RunRunning, event.RunResumedFor)
	act("cancel", event.RunCancelled, event.RunCancelRequestedFor, "confirm", "yes")
	// A final run takes no more actions.
	if code, body, _ := b.do(http.MethodPost, "/runs/"+runID+"/cancel", form("confirm", "yes"), nil); code != http.StatusConflict || !strings.Contains(body, "cancelled") {
		t.Fatalf("cancelling a cancelled run: %d %.300s", code, body)
	}
}

// A viewer's forged POSTs, with a valid CSRF token, are refused by the
// API's own check (403); without a session at all they are 401; nothing
// is recorded.
func TestViewerActsOnNothing(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv, em := answeringServer(t, l)
	b := newBrowser(t, srv.URL)
	if code := b.login("viewer-token"); code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", code)
	}
	csrf := b.csrf("/runs/" + runID)
	for _, action := range []string{"pause", "resume", "cancel"} {
		code, body, _ := b.do(http.MethodPost, "/runs/"+runID+"/"+action, url.Values{"csrf": {csrf}, "confirm": {"yes"}}, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "may not "+action+" runs") {
			t.Errorf("a viewer's forged %s: %d %.300s", action, code, body)
		}
	}
	anon := newBrowser(t, srv.URL)
	for _, action := range []string{"pause", "resume", "cancel"} {
		code, _, _ := anon.do(http.MethodPost, "/runs/"+runID+"/"+action, url.Values{"csrf": {anon.csrf("/login")}, "confirm": {"yes"}}, nil)
		if code != http.StatusUnauthorized {
			t.Errorf("an anonymous %s: %d", action, code)
		}
	}
	if em.count() != 0 {
		t.Fatalf("%d actions recorded", em.count())
	}
}

// The JSON API's POST /api/runs/{id}/{action} needs an operator's token:
// none is 401, a viewer's 403; an operator's pause is signed for them.
func TestRunActionsOverTheAPI(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv, em := answeringServer(t, l)
	post := func(token, action, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/runs/"+runID+"/"+action, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct{ Error, Event, Operator string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error + e.Event + " " + e.Operator
	}
	if code, body := post("", "pause", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s", code, body)
	}
	if code, body := post("viewer-token", "pause", ""); code != http.StatusForbidden {
		t.Fatalf("a viewer's token: %d %s", code, body)
	}
	if code, body := post("op-token", "pause", `{"reason": 3}`); code != http.StatusBadRequest {
		t.Fatalf("a bad body: %d %s", code, body)
	}
	if em.count() != 0 {
		t.Fatalf("%d actions recorded by refused requests", em.count())
	}
	if code, body := post("op-token", "pause", `{"reason":"db"}`); code != http.StatusAccepted || !strings.HasSuffix(body, " olga") {
		t.Fatalf("an operator's pause: %d %s", code, body)
	}
	if em.count() != 1 || em.drafts[0].Type != event.RunPausedFor {
		t.Fatalf("recorded %v", em.drafts)
	}
}
