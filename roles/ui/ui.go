// Package ui is the ui role's JSON API of runs and gates over HTTP; the
// web dashboard (package web) is served beside it on the same read model.
// It pages the way the query API does, with the same requests, limits and
// errors:
//
//	GET /api/runs?limit=&cursor=&after=&before=&status=&goal=&since=&until=
//	    → {"items": [run summary], "next": "…", "end": false}
//	GET /api/runs/{id}?limit=
//	    → {"run": run summary, "steps": {"items": [step], "next": "…", "end": false}}
//	GET /api/runs/{id}/steps?cursor=&limit=
//	    → {"items": [step], "next": "…", "end": true}
//
//	GET  /api/gates?run=&step=&limit=&cursor= → a page of open gates
//	POST /api/gates  → an operator's answer, signed by the ui node on their
//	                   behalf (WithGates; always needs their API token)
//	POST /api/runs/{id}/pause|resume|cancel  {"reason"}
//	                 → an operator's run.paused_for, run.resumed_for or
//	                   run.cancel_requested_for, signed by the ui node on
//	                   their behalf (WithGates; always needs their token)
//
// A page that is not the last also carries a Link header with rel="next".
// Bad input is a 400, an unknown run a 404, an ambiguous id prefix a 409,
// each with a JSON body {"error", "hint", "code"}.
package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/internal/apiwire"
)

// Runs is the read model the UI serves: the node's answers to runs.list,
// runs.get and runs.steps.
type Runs interface {
	List(ctx context.Context, req apiwire.RunsListRequest) (apiwire.Page[json.RawMessage], error)
	Get(ctx context.Context, req apiwire.RunsGetRequest) (apiwire.RunDetail[json.RawMessage], error)
	Steps(ctx context.Context, req apiwire.RunsStepsRequest) (apiwire.Page[json.RawMessage], error)
}

// UI serves the HTTP API.
type UI struct {
	runs  Runs
	now   func() time.Time
	gates *Gates // nil: no gate routes (WithGates)
}

// New returns a UI over runs.
func New(runs Runs) *UI { return &UI{runs: runs, now: time.Now} }

// Register adds the UI's routes to mux.
func (u *UI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/runs", u.list)
	mux.HandleFunc("GET /api/runs/{id}", u.get)
	mux.HandleFunc("GET /api/runs/{id}/steps", u.steps)
	if u.gates != nil {
		mux.HandleFunc("GET /api/gates", u.listGates)
		mux.HandleFunc("POST /api/gates", u.answerGate)
		mux.HandleFunc("POST /api/runs/{id}/{brake}", u.brakeRun)
		if u.gates.Proposal != nil {
			mux.HandleFunc("POST /api/proposals/{id}/{decision}", u.decideProposal)
		}
	}
}

func (u *UI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := apiwire.RunsListRequest{Status: q.Get("status"), Goal: q.Get("goal"), After: q.Get("after"), Before: q.Get("before"), Cursor: q.Get("cursor")}
	var err error
	if req.Limit, err = limit(q); err == nil {
		if req.Since, err = u.timeArg(q, "since"); err == nil {
			req.Until, err = u.timeArg(q, "until")
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := u.runs.List(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writePage(w, r, page)
}

func (u *UI) get(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	d, err := u.runs.Get(r.Context(), apiwire.RunsGetRequest{ID: r.PathValue("id"), Limit: n})
	if err != nil {
		writeError(w, err)
		return
	}
	if d.Steps != nil && !d.Steps.End {
		next := &url.URL{Path: "/api/runs/" + d.Run.ID + "/steps", RawQuery: url.Values{"cursor": {d.Steps.Next}}.Encode()}
		w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next))
	}
	writeJSON(w, http.StatusOK, d)
}

func (u *UI) steps(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := limit(q)
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := u.runs.Steps(r.Context(), apiwire.RunsStepsRequest{ID: r.PathValue("id"), Cursor: q.Get("cursor"), Limit: n})
	if err != nil {
		writeError(w, err)
		return
	}
	writePage(w, r, page)
}

// limit reads ?limit= (absent: 0, the default; the read model clamps it).
func limit(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, apiwire.WithHint(fmt.Errorf("%w: limit %q is not a count", apiwire.ErrBadRequest, s), "limit is a whole number >= 0 (0: the default)")
	}
	return n, nil
}

// timeArg reads an RFC 3339 time or a duration before now.
func (u *UI) timeArg(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := apiwire.ParseTime(s, u.now())
	if err != nil {
		return time.Time{}, apiwire.WithHint(fmt.Errorf("%s: %w", name, err), name+"=2026-03-01T12:00:00Z or "+name+"=2h")
	}
	return t, nil
}

// writePage writes a page, with a Link to the next one unless it is the
// last: the request's URL with cursor set to the page's Next.
func writePage(w http.ResponseWriter, r *http.Request, page apiwire.Page[json.RawMessage]) {
	if !page.End {
		q := r.URL.Query()
		q.Set("cursor", page.Next)
		next := &url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next))
	}
	writeJSON(w, http.StatusOK, page)
}

// apiError is the body of an error answer.
type apiError struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
	Code  string `json:"code,omitempty"`
}

func writeError(w http.ResponseWriter, err error) {
	status, v := errorAnswer(err)
	writeJSON(w, status, v)
}

// errorAnswer is the status and body of an error answer.
func errorAnswer(err error) (int, any) {
	code, status := "", http.StatusInternalServerError
	switch {
	case errors.Is(err, apiwire.ErrBadRequest):
		code, status = apiwire.CodeBadRequest, http.StatusBadRequest
	case errors.Is(err, apiwire.ErrNotFound):
		code, status = apiwire.CodeNotFound, http.StatusNotFound
	case errors.Is(err, apiwire.ErrAmbiguous):
		code, status = apiwire.CodeAmbiguous, http.StatusConflict
	case errors.Is(err, errStale):
		code, status = "stale", http.StatusConflict
	case errors.Is(err, errWrongStatus):
		code, status = "wrong_status", http.StatusConflict
	}
	return status, apiError{Error: err.Error(), Hint: apiwire.HintOf(err), Code: code}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
