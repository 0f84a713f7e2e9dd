package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/agentic-dev/agentic/roles/ui"
)

// runs is a fixed read model.
type runs []orchestrator.RunView

func (r runs) Runs(status string, limit int) []orchestrator.RunView {
	var out []orchestrator.RunView
	for _, v := range r {
		if status == "" || v.Status == status {
			out = append(out, v)
		}
	}
	return out
}

func (r runs) Run(id string) (orchestrator.RunView, error) {
	for _, v := range r {
		if v.ID == id {
			return v, nil
		}
	}
	return orchestrator.RunView{}, fmt.Errorf("%w: %s", orchestrator.ErrNotFound, id)
}

func TestRunsAPI(t *testing.T) {
	mux := http.NewServeMux()
	ui.New(runs{{ID: "a", Status: "running", Steps: []orchestrator.StepView{}}, {ID: "b", Status: "failed", Steps: []orchestrator.StepView{}}}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string, v any) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: content type %q", path, resp.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	var list []orchestrator.RunView
	if code := get("/api/runs?status=failed", &list); code != 200 || len(list) != 1 || list[0].ID != "b" {
		t.Fatalf("filtered list: %d %+v", code, list)
	}
	var one orchestrator.RunView
	if code := get("/api/runs/a", &one); code != 200 || one.Status != "running" {
		t.Fatalf("get a: %d %+v", code, one)
	}
	var e map[string]string
	if code := get("/api/runs/zzz", &e); code != 404 || e["error"] == "" {
		t.Fatalf("unknown run: %d %+v", code, e)
	}
	var empty []orchestrator.RunView
	if code := get("/api/runs?status=cancelled", &empty); code != 200 || empty == nil {
		t.Fatalf("empty list must be [] not null: %d %v", code, empty)
	}
}
