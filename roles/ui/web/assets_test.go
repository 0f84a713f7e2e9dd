package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The page names its assets with their content's version, and an asset
// asked for by that version may be kept by the browser for good (a new
// binary with other assets names other versions); asked for by another
// version or none, it must be checked again.
func TestAssetsVersioned(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	_, _, body := get(t, srv.URL+"/runs/"+runID)
	m := regexp.MustCompile(`src="(/assets/app\.js\?v=[0-9a-f]{12})"`).FindStringSubmatch(body)
	if m == nil || !regexp.MustCompile(`href="/assets/app\.css\?v=[0-9a-f]{12}"`).MatchString(body) {
		t.Fatal("the page does not name its assets by version")
	}
	code, h, js := get(t, srv.URL+m[1])
	if code != http.StatusOK || !strings.Contains(h.Get("Cache-Control"), "immutable") || !strings.Contains(js, "use strict") {
		t.Fatalf("%s: %d, Cache-Control %q", m[1], code, h.Get("Cache-Control"))
	}
	for _, u := range []string{"/assets/app.js", "/assets/app.js?v=000000000000"} {
		if code, h, _ := get(t, srv.URL+u); code != http.StatusOK || h.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: %d, Cache-Control %q, want no-cache", u, code, h.Get("Cache-Control"))
		}
	}
}
