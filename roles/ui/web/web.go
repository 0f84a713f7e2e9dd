// Package web is the ui role's dashboard: server-rendered HTML pages over
// the same read model the JSON API serves (roles/ui), with live updates
// over one Server-Sent Events stream per page.
//
//	GET /                    runs, newest first, paged, filtered; live statuses
//	GET /runs/{id}           a run: its plan as a DAG laid out on the server
//	                         (package layout), the timeline of its attempts,
//	                         the selected step (?step=), revisions (?rev=)
//	GET /runs/{id}/steps/{step}  one step's detail (a fragment with ?fragment=1)
//	GET /runs/{id}/live      the run page's stream of state diffs
//	GET /runs/{id}/steps/{step}/output  a step's output, live (SSE)
//	POST /runs/{id}/pause    a signed-in operator pauses the run; resume
//	POST /runs/{id}/resume   and cancel (confirmed) likewise, through
//	POST /runs/{id}/cancel   the JSON API's own path (Source.Brake)
//	GET /gates               the open gates, and the newest decided ones
//	GET /proposals           the self-improvement proposals, pending first
//	GET /proposals/{id}      one proposal: its change as a diff, evidence,
//	                         validation, every lifecycle state
//	POST /proposals/{id}/decide  a signed-in operator approves or rejects
//	                         a pending proposal (Source.Decide)
//	GET /nodes               the cluster's nodes and alarms
//	GET /audit               the ledger's events, filtered by type, run, node
//	GET /audit.json          what /audit shows, as JSON
//	GET /audit/live          new events (SSE, resumes from Last-Event-ID)
//	GET /events/{seq}        one event, with its raw JSON
//	GET /assets/…            the page's CSS and script, from embed.FS
//	                         (immutable when asked for by their version)
//
// Every page is sent with a Content-Security-Policy that allows no inline
// script and no inline style; every text from a run (goals, commands,
// output, errors: a model writes them) goes through html/template's
// escaping. The pages only read, but for a signed-in operator's forms
// (gate answers, run pause/resume/cancel, proposal decisions), each of which goes through the
// JSON API's own check of the operator's token and is CSRF-protected.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/plugin"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Runs is the read model of runs (the node's answers to runs.list, runs.get
// and runs.steps), as roles/ui serves it.
type Runs interface {
	List(ctx context.Context, req apiwire.RunsListRequest) (apiwire.Page[json.RawMessage], error)
	Get(ctx context.Context, req apiwire.RunsGetRequest) (apiwire.RunDetail[json.RawMessage], error)
	Steps(ctx context.Context, req apiwire.RunsStepsRequest) (apiwire.Page[json.RawMessage], error)
}

// Source is what the pages read: the node's answers to its query methods.
// Runs and Audit are required; a nil Nodes, Alarms or Gates leaves its page
// saying the node cannot tell.
type Source struct {
	Runs Runs
	// Audit answers the audit method (a long-poll when Wait is set).
	Audit func(ctx context.Context, req apiwire.AuditRequest) (apiwire.LedgerPage[json.RawMessage], error)
	// Nodes answers nodes.list, Alarms alarms.list, Gates gates.list.
	Nodes  func(ctx context.Context, req apiwire.NodesListRequest) (apiwire.NodesPage[json.RawMessage], error)
	Alarms func(ctx context.Context, req apiwire.AlarmsListRequest) (apiwire.Page[json.RawMessage], error)
	Gates  func(ctx context.Context, req apiwire.GatesRequest) (apiwire.Page[json.RawMessage], error)
	// Changed returns a channel closed at the next change of the ledger
	// (nil: the live streams look every second).
	Changed func() <-chan struct{}
	// Operator checks an API token and returns the operator it names and
	// their roles (nil: nobody signs in, the pages only read). Answer
	// records a gate answer for a token as POST /api/gates does
	// (ui.UI.AnswerGate; nil: the inbox has no controls).
	Operator func(token string) (id string, roles []string, err error)
	// Refused reports whether an error of Operator is the cluster's
	// refusal of the token's credential (revoked): a session whose token
	// is refused ends, and the request that found it out gets 403 (nil:
	// every error only ends the session, as an expired token does).
	Refused func(err error) bool
	Answer  Answer
	// Output follows a step's output from the logs stream (nil: the step
	// panel shows the output tails of finished attempts alone).
	Output Output
	// Brake pauses, resumes or cancels a run for a token as POST
	// /api/runs/{id}/{pause,resume,cancel} does (ui.UI.BrakeRun; nil: the
	// run pages have no controls).
	Brake Brake
	// Plugin answers plugins.show: the gate inbox shows a tool step's
	// definition from it (toolgate.go; nil: the tool and its arguments
	// alone).
	Plugin func(ctx context.Context, name string) (plugin.View, error)
	// Proposals answers proposals.list, Proposal proposals.show (an
	// unknown id is an error matching apiwire.ErrNotFound); nil leaves
	// the Proposals page saying the node cannot tell.
	Proposals func(ctx context.Context) ([]tuning.Proposal, error)
	Proposal  func(ctx context.Context, id string) (tuning.Proposal, error)
	// Decide approves or rejects a proposal for a token
	// (ui.UI.DecideProposal; nil: the proposal pages have no controls).
	Decide Decide
}

// Server serves the dashboard. Close ends its live streams.
type Server struct {
	src   Source
	log   *slog.Logger
	pages map[string]*template.Template
	now   func() time.Time

	layouts layoutCache
	hub     *hub
	// outputs counts the step output streams open (maxOutputStreams).
	outputs atomic.Int32

	// ctx ends every live stream when the server closes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Options tune a Server; zero fields take defaults.
type Options struct {
	// Log receives the server's warnings (slog.Default() when nil).
	Log *slog.Logger
	// Frame is the least time between two frames of a live stream
	// (250ms: at most four a second).
	Frame time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// New returns a dashboard over src.
func New(src Source, o Options) (*Server, error) {
	if src.Runs == nil || src.Audit == nil {
		return nil, errors.New("web: a dashboard needs the runs read model and the audit")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Frame <= 0 {
		o.Frame = 250 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{src: src, log: o.Log, pages: pages, now: o.Now, ctx: ctx, cancel: cancel,
		layouts: layoutCache{max: 64, m: map[layoutKey]*dagLayout{}}}
	s.hub = newHub(s, o.Frame)
	return s, nil
}

// Close ends the live streams and waits for their goroutines.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Register adds the dashboard's routes to mux.
func (s *Server) Register(mux *http.ServeMux) {
	h := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, secure(s.session(f))) }
	h("GET /{$}", s.runsPage)
	h("GET /runs/{id}", s.runPage)
	h("GET /runs/{id}/steps/{step}", s.stepPage)
	h("GET /runs/{id}/live", s.runLive)
	h("GET /runs/{id}/steps/{step}/output", s.stepOutput)
	h("GET /runs-live", s.runsLive)
	h("GET /gates", s.gatesPage)
	h("GET /proposals", s.proposalsPage)
	h("GET /proposals/{id}", s.proposalPage)
	h("GET /nodes", s.nodesPage)
	h("GET /audit", s.auditPage)
	h("GET /audit.json", s.auditJSON)
	h("GET /audit/live", s.auditLive)
	h("GET /events/{seq}", s.eventPage)
	h("GET /login", s.loginPage)
	h("POST /login", s.login)
	h("POST /logout", s.logout)
	h("POST /gates/answer", s.answerGate)
	h("POST /runs/{id}/{action}", s.brakeRun)
	h("POST /proposals/{id}/decide", s.decideProposal)
	mux.Handle("GET /assets/", secure(serveAssets()))
}

// CSP is the Content-Security-Policy of every page: scripts and styles
// from the node alone, no inline script or style, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secure adds the headers every answer carries.
func secure(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: with no-referrer a browser sends
		// "Origin: null" on the forms' POSTs, which checkPost refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		next(w, r)
	})
}

// parsePages parses each page with the base layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "base" || base == "parts" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/base.html", "templates/parts.html", n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", n, err)
		}
		out[base] = t
	}
	return out, nil
}

// page is what every template gets: the page's title and nav entry, and
// its own data.
type page struct {
	Title string
	Nav   string
	// User is the signed-in operator (nil: none), CSRF the token every
	// form carries.
	User *user
	CSRF string
	// Live is the URL of the page's live stream ("" for none).
	Live string
	Data any
}

// render writes page name; a template error after the first byte can only
// be logged.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t := s.pages[name]
	p.User, p.CSRF = userOf(r), csrfOf(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "base", p); err != nil {
		s.log.Warn("web: render", "page", name, "err", err)
	}
}

// renderFragment writes one template of a page without the layout.
func (s *Server) renderFragment(w http.ResponseWriter, name, block string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages[name].ExecuteTemplate(w, block, data); err != nil {
		s.log.Warn("web: render", "page", name, "block", block, "err", err)
	}
}

// fail renders an error page: the read model's classes of error map to
// statuses as the JSON API maps them.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, apiwire.ErrBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, apiwire.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, apiwire.ErrAmbiguous):
		status = http.StatusConflict
	}
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Data: errorView{Status: status, Error: err.Error(), Hint: apiwire.HintOf(err)}})
}

type errorView struct {
	Status      int
	Error, Hint string
}
