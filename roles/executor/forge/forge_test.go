package forge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Open posts the pull request with the token from the file, and reads
// the answer; a refusal is an error with the forge's words and never the
// token.
func TestOpen(t *testing.T) {
	var got map[string]any
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		_ = json.NewDecoder(r.Body).Decode(&got)
		if got["base"] == "main" {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"number": 7, "html_url": "https://forge.example/acme/service/pull/7"}`))
			return
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"message": "Validation Failed"}`))
	}))
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("s3cr3t-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Forge{Name: "stub", API: srv.URL + "/api/v3", TokenFile: tokFile}
	pr, err := f.Open(context.Background(), Request{Owner: "acme", Repo: "service", Title: "T", Head: "agentic/r1", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 7 || path != "/api/v3/repos/acme/service/pulls" || auth != "Bearer s3cr3t-t0ken" {
		t.Errorf("pr %+v path %s auth %q", pr, path, auth)
	}
	if got["head"] != "agentic/r1" || got["draft"] != true || got["title"] != "T" {
		t.Errorf("posted %v", got)
	}
	_, err = f.Open(context.Background(), Request{Owner: "acme", Repo: "service", Head: "agentic/r1", Base: "dev"})
	if err == nil || !strings.Contains(err.Error(), "Validation Failed") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("refusal: %v", err)
	}
	f.TokenFile = filepath.Join(t.TempDir(), "missing")
	if _, err := f.Open(context.Background(), Request{}); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("missing token: %v", err)
	}
}

func TestOwnerRepo(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/service.git": "acme/service",
		"git@github.com:acme/service.git":     "acme/service",
		"/srv/git/acme/service.git":           "acme/service",
		"ssh://git@host:22/acme/service":      "acme/service",
	} {
		o, r, err := OwnerRepo(in)
		if err != nil || o+"/"+r != want {
			t.Errorf("%s: %s/%s %v", in, o, r, err)
		}
	}
	if _, _, err := OwnerRepo("service"); err == nil {
		t.Error("one part accepted")
	}
}
