package node

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// On an address that needs a token, a browser signed in to the dashboard
// carries it in its session cookie: that cookie lets it through as the
// Authorization header does. The sign-in page and the page's assets need
// none (signing in checks the token itself); everything else without a
// valid token is refused.
func TestRequireTokenTakesTheDashboardSession(t *testing.T) {
	root, err := natsauth.InitRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, "olga", trust.KindOperator, []string{"operator"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := trust.APIToken(op, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	check := func(tok string) (*trust.Credential, error) { return trust.VerifyAPIToken(root, tok, time.Now()) }
	h := requireToken(check, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, c := range []struct {
		method, path, auth, cookie string
		want                       int
	}{
		{"GET", "/", "", "", http.StatusUnauthorized},
		{"GET", "/", "Bearer " + tok, "", http.StatusTeapot},
		{"GET", "/", "", tok, http.StatusTeapot},
		{"GET", "/runs/x", "", "forged", http.StatusUnauthorized},
		{"GET", "/login", "", "", http.StatusTeapot},
		{"POST", "/login", "", "", http.StatusTeapot},
		{"GET", "/assets/app.css", "", "", http.StatusTeapot},
		{"GET", "/api/runs", "", "", http.StatusUnauthorized},
		{"GET", "/login/../api/runs", "", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: web.SessionCookie, Value: c.cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %s (auth %t, cookie %t): %d, want %d", c.method, c.path, c.auth != "", c.cookie != "", rec.Code, c.want)
		}
	}
}
