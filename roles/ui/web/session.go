package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// Sessions and CSRF.
//
// A browser signs in by posting an operator's API token (agentctl keys
// api-token) to /login; the dashboard checks it and keeps it in an HttpOnly,
// SameSite=Strict cookie for at most an hour, checking it again on every
// request. Every form carries a CSRF token that must equal the one in the
// browser's own HttpOnly SameSite=Strict cookie (a double submit a page of
// another site can neither read nor send), and a POST whose Origin or
// Sec-Fetch-Site says another site sent it is refused before anything
// else.
const (
	// SessionCookie holds a signed-in browser's API token.
	SessionCookie = "agentic_session"
	csrfCookie    = "agentic_csrf"
	sessionMaxAge = time.Hour
)

// user is the signed-in operator of a request (nil: none).
type user struct {
	ID       string
	Roles    []string
	Operator bool
	token    string
}

type ctxKey int

const (
	userKey ctxKey = iota
	csrfKey
)

// session reads the request's session and CSRF cookies, setting a CSRF
// cookie when the browser has none, and passes them on in the context.
func (s *Server) session(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		csrf := ""
		if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
			csrf = c.Value
		} else {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			csrf = base64.RawURLEncoding.EncodeToString(b)
			http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: csrf, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		}
		ctx = context.WithValue(ctx, csrfKey, csrf)
		if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" && s.src.Operator != nil {
			id, roles, err := s.src.Operator(c.Value)
			switch {
			case err != nil && s.src.Refused != nil && s.src.Refused(err):
				// A revoked credential ends the session, and this request
				// is refused: what the browser asked for was asked by the
				// revoked operator.
				clearSession(w, r)
				s.render(w, r.WithContext(ctx), http.StatusForbidden, "error", page{Title: "Refused", Data: errorView{Status: http.StatusForbidden,
					Error: "your session ended: " + err.Error(), Hint: "an administrator issues new credentials; until then the dashboard only reads"}})
				return
			case err != nil:
				// An expired or unknown token ends the session.
				clearSession(w, r)
			default:
				ctx = context.WithValue(ctx, userKey, &user{ID: id, Roles: roles, Operator: slices.Contains(roles, event.RoleOperator), token: c.Value})
			}
		}
		next(w, r.WithContext(ctx))
	}
}

func userOf(r *http.Request) *user {
	u, _ := r.Context().Value(userKey).(*user)
	return u
}

func csrfOf(r *http.Request) string {
	c, _ := r.Context().Value(csrfKey).(string)
	return c
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// errCSRF refuses a POST that did not come from the dashboard's own form.
var errCSRF = errors.New("web: this form did not come from this dashboard (a missing or wrong CSRF token, or another site's request): reload the page and try again")

// checkPost refuses a POST from another site or without the form's CSRF
// token; it reads the form.
func checkPost(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errCSRF
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errCSRF
		}
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: the form: %w", apiwire.ErrBadRequest, err)
	}
	want, got := csrfOf(r), r.PostForm.Get("csrf")
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return errCSRF
	}
	return nil
}

// loginView is the sign-in page's data.
type loginView struct {
	Error    string
	Disabled bool
	CSRF     string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Nav: "login", Data: loginView{Disabled: s.src.Operator == nil, CSRF: csrfOf(r)}})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := checkPost(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	if s.src.Operator == nil {
		s.render(w, r, http.StatusNotFound, "login", page{Title: "Sign in", Nav: "login", Data: loginView{Disabled: true, CSRF: csrfOf(r)}})
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	if _, _, err := s.src.Operator(tok); tok == "" || err != nil {
		why := "no token given"
		if err != nil {
			why = err.Error()
		}
		s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Nav: "login", Data: loginView{Error: why, CSRF: csrfOf(r)}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: tok, Path: "/", MaxAge: int(sessionMaxAge / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/gates", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if err := checkPost(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	clearSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// refuse renders a refused POST: a CSRF failure is a 403.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errCSRF) {
		s.render(w, r, http.StatusForbidden, "error", page{Title: "Refused", Data: errorView{Status: http.StatusForbidden, Error: err.Error()}})
		return
	}
	s.fail(w, r, err)
}

// answerGate records a gate answer from the inbox's form through the same
// path as POST /api/gates (Source.Answer), for the signed-in operator.
func (s *Server) answerGate(w http.ResponseWriter, r *http.Request) {
	if err := checkPost(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	u := userOf(r)
	if u == nil || s.src.Answer == nil {
		s.render(w, r, http.StatusUnauthorized, "error", page{Title: "Sign in", Data: errorView{Status: http.StatusUnauthorized,
			Error: "answering a gate needs a signed-in operator", Hint: "sign in with an operator's token: agentctl keys api-token"}})
		return
	}
	f := r.PostForm
	a := map[string]any{"run": f.Get("run"), "subject": f.Get("subject"), "action": f.Get("action"), "reason": strings.TrimSpace(f.Get("reason"))}
	if st := f.Get("step"); st != "" {
		a["step"] = st
	}
	if f.Get("action") == string(event.GateEdit) {
		a["command"] = f.Get("command")
	}
	if f.Get("confirm") != "yes" {
		s.render(w, r, http.StatusBadRequest, "error", page{Title: "Not confirmed", Data: errorView{Status: http.StatusBadRequest,
			Error: "the answer was not confirmed: nothing was recorded", Hint: "tick \"I confirm\" beside the answer"}})
		return
	}
	body, _ := json.Marshal(a)
	status, v := s.src.Answer(r.Context(), u.token, bytes.NewReader(body))
	if status != http.StatusAccepted {
		b, _ := json.Marshal(v)
		var e struct{ Error, Hint string }
		_ = json.Unmarshal(b, &e)
		s.render(w, r, status, "error", page{Title: "Not recorded", Data: errorView{Status: status, Error: e.Error, Hint: e.Hint}})
		return
	}
	b, _ := json.Marshal(v)
	var ok struct{ Event string }
	_ = json.Unmarshal(b, &ok)
	q := url.Values{"recorded": {ok.Event}, "action": {f.Get("action")}, "run": {f.Get("run")}, "step": {f.Get("step")}}
	http.Redirect(w, r, "/gates?"+q.Encode(), http.StatusSeeOther)
}

// Answer is POST /api/gates for a token in hand (ui.UI.AnswerGate): the
// HTTP status and the JSON answer.
type Answer = func(ctx context.Context, token string, body io.Reader) (int, any)

// Brake is POST /api/runs/{id}/{pause,resume,cancel} for a token in hand
// (ui.UI.BrakeRun): the HTTP status and the JSON answer.
type Brake = func(ctx context.Context, token, run, action, reason string) (int, any)

// runActions are the controls of a run in status for the request's user:
// nil unless a signed-in operator and a node that takes actions.
func (s *Server) runActions(r *http.Request, status event.RunStatus) *runActions {
	u := userOf(r)
	if u == nil || !u.Operator || s.src.Brake == nil {
		return nil
	}
	a := &runActions{CSRF: csrfOf(r), PauseWhen: pauseWhen, ResumeWhen: resumeWhen, CancelWhen: cancelWhen}
	a.Pause = slices.Contains(strings.Fields(pauseWhen), string(status))
	a.Resume = slices.Contains(strings.Fields(resumeWhen), string(status))
	a.Cancel = slices.Contains(strings.Fields(cancelWhen), string(status))
	if !a.Pause && !a.Resume && !a.Cancel {
		return nil // a final run: nothing to do, now or later
	}
	return a
}

// The run statuses each action is allowed in (space-separated, as the
// page's data-when attributes carry them: the script shows a form only
// while the run's live status is one of its own).
var (
	pauseWhen  = string(event.RunRunning)
	resumeWhen = string(event.RunPaused)
	cancelWhen = strings.Join([]string{string(event.RunSubmitted), string(event.RunPlanning), string(event.RunPlanned),
		string(event.RunRunning), string(event.RunPaused)}, " ")
)

// brakeRun pauses, resumes or cancels a run from its page's forms through
// the same path as POST /api/runs/{id}/{action} (Source.Brake), for the
// signed-in operator. A cancel must be confirmed.
func (s *Server) brakeRun(w http.ResponseWriter, r *http.Request) {
	if err := checkPost(r); err != nil {
		s.refuse(w, r, err)
		return
	}
	action := r.PathValue("action")
	if action != "pause" && action != "resume" && action != "cancel" {
		s.fail(w, r, apiwire.WithHint(fmt.Errorf("%w: %q is no action on a run", apiwire.ErrBadRequest, action), "pause, resume or cancel"))
		return
	}
	u := userOf(r)
	if u == nil || s.src.Brake == nil {
		s.render(w, r, http.StatusUnauthorized, "error", page{Title: "Sign in", Data: errorView{Status: http.StatusUnauthorized,
			Error: "pausing, resuming or cancelling a run needs a signed-in operator", Hint: "sign in with an operator's token: agentctl keys api-token"}})
		return
	}
	if action == "cancel" && r.PostForm.Get("confirm") != "yes" {
		s.render(w, r, http.StatusBadRequest, "error", page{Title: "Not confirmed", Data: errorView{Status: http.StatusBadRequest,
			Error: "the cancel was not confirmed: nothing was recorded", Hint: "tick \"I confirm\" beside the Cancel button"}})
		return
	}
	run := r.PathValue("id")
	status, v := s.src.Brake(r.Context(), u.token, run, action, r.PostForm.Get("reason"))
	b, _ := json.Marshal(v)
	if status != http.StatusAccepted {
		var e struct{ Error, Hint string }
		_ = json.Unmarshal(b, &e)
		s.render(w, r, status, "error", page{Title: "Not recorded", Data: errorView{Status: status, Error: e.Error, Hint: e.Hint}})
		return
	}
	var ok struct{ Event, Run string }
	_ = json.Unmarshal(b, &ok)
	if ok.Run == "" {
		ok.Run = run
	}
	q := url.Values{"acted": {action}, "event": {ok.Event}}
	http.Redirect(w, r, "/runs/"+url.PathEscape(ok.Run)+"?"+q.Encode(), http.StatusSeeOther)
}
