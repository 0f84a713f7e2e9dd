// Package ui is the ui role: for now a JSON API of runs over HTTP
// (GET /api/runs, GET /api/runs/{id}); the web dashboard comes later on the
// same read model.
package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentic-dev/agentic/roles/orchestrator"
)

// Runs is the read model the UI serves.
type Runs interface {
	Runs(status string, limit int) []orchestrator.RunView
	Run(id string) (orchestrator.RunView, error)
}

// UI serves the HTTP API.
type UI struct{ runs Runs }

// New returns a UI over runs.
func New(runs Runs) *UI { return &UI{runs: runs} }

// Register adds the UI's routes to mux.
func (u *UI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/runs", u.list)
	mux.HandleFunc("GET /api/runs/{id}", u.get)
}

func (u *UI) list(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	runs := u.runs.Runs(r.URL.Query().Get("status"), limit)
	if runs == nil {
		runs = []orchestrator.RunView{}
	}
	writeJSON(w, http.StatusOK, runs)
}

func (u *UI) get(w http.ResponseWriter, r *http.Request) {
	run, err := u.runs.Run(r.PathValue("id"))
	switch {
	case errors.Is(err, orchestrator.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusOK, run)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
