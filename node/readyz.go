package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentic-dev/agentic/internal/health"
)

// readyz answers GET /readyz: 200 when the node is ready, 503 when not,
// with a first line "ready" or "not ready: <check>: <reason>" and one
// line per check ("[+]name ok" or "[-]name failed: reason"). With
// ?verbose or Accept: application/json the body is the JSON array of the
// checks' statuses ([]health.Status) instead.
func (n *Node) readyz(w http.ResponseWriter, r *http.Request) {
	err := n.Ready()
	code := http.StatusOK
	if err != nil {
		code = http.StatusServiceUnavailable
	}
	checks := n.Checks()
	if checks == nil {
		checks = []health.Status{}
	}
	if r.URL.Query().Has("verbose") || strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(checks) // a failed write: the client left
		return
	}
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "not ready: %v\n", err)
	} else {
		b.WriteString("ready\n")
	}
	for _, c := range checks {
		b.WriteString(checkLine(c))
		b.WriteByte('\n')
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String())) // a failed write: the client left
}

// checkLine is a check's /readyz line.
func checkLine(c health.Status) string {
	if c.OK {
		return "[+]" + c.Name + " ok"
	}
	s := "[-]" + c.Name + " failed: " + c.Reason
	if c.Alarm != "" {
		s += " (alarm " + string(c.Alarm) + ")"
	}
	if !c.Blocking {
		s += " (not blocking)"
	}
	return s
}
