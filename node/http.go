package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"path"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/agentic-dev/agentic/roles/ui"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// httpServer is one HTTP listener of the node and its server.
type httpServer struct {
	srv *http.Server
	ln  net.Listener
}

func (h *httpServer) addr() string {
	if h.ln == nil {
		return ""
	}
	return h.ln.Addr().String()
}

// ProbeAddr is the address /healthz, /readyz and /metrics are served on
// without authentication ("" when they are on the HTTP API's listener).
func (n *Node) ProbeAddr() string { return n.probe.addr() }

// DebugAddr is the address the Go profiles (/debug/pprof/) are served on
// ("" without debug_listen).
func (n *Node) DebugAddr() string { return n.debug.addr() }

// HTTPAuth reports whether the HTTP API asks for an operator token
// (http_listen is not loopback and --insecure is not given).
func (n *Node) HTTPAuth() bool { return n.cfg.HTTPAuthRequired() }

// startHTTP serves the HTTP endpoints: the JSON API on http_listen, with
// the probes (/healthz, /readyz, /metrics) there too unless probe_listen
// serves them on their own, without authentication. On an http_listen that
// is not loopback every request there needs an operator token
// (config.HTTPAuthRequired, requireToken).
func (n *Node) startHTTP() error {
	probes := http.NewServeMux()
	probes.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	probes.HandleFunc("GET /readyz", n.readyz)
	probes.Handle("GET /metrics", n.metricsHandler())
	if n.cfg.ProbeListen != "" {
		if err := n.serveHTTP(&n.probe, n.cfg.ProbeListen, "probe", probes); err != nil {
			return err
		}
	}
	if n.cfg.DebugListen != "" {
		if err := n.serveHTTP(&n.debug, n.cfg.DebugListen, "debug", debugMux()); err != nil {
			return err
		}
	}
	if n.cfg.HTTPListen == "" {
		return nil
	}
	mux := http.NewServeMux()
	if n.cfg.ProbeListen == "" {
		mux.Handle("GET /healthz", probes)
		mux.Handle("GET /readyz", probes)
		mux.Handle("GET /metrics", probes)
	}
	check := tokenChecker(n.root, n.store)
	if n.has(event.RoleUI) && n.runs != nil {
		operator := func(tok string) (string, []string, error) {
			cred, err := check(tok)
			if err != nil {
				return "", nil, err
			}
			return cred.ID, cred.Roles, nil
		}
		g := ui.Gates{
			List:     n.runs.GatesPage,
			Emit:     n.roleEnv(event.RoleUI).Emit,
			Operator: operator,
		}
		var decide web.Decide
		if n.improve != nil {
			show := guard(n, n.proposalsShow)
			g.Proposal = func(ctx context.Context, id string) (improve.Proposal, error) {
				return show(ctx, api.ProposalRequest{ID: id})
			}
		}
		u := ui.New(n.runReads()).WithGates(g)
		u.Register(mux)
		brake := func(ctx context.Context, token, run, action, reason string) (int, any) {
			return u.BrakeRun(ctx, token, run, ui.Brake(action), reason)
		}
		if g.Proposal != nil {
			decide = u.DecideProposal
		}
		if err := n.startDashboard(mux, operator, u.AnswerGate, brake, decide); err != nil {
			return err
		}
	}
	var h http.Handler = mux
	if n.cfg.HTTPAuthRequired() {
		h = requireToken(check, mux)
	}
	return n.serveHTTP(&n.http, n.cfg.HTTPListen, "http", h)
}

// startDashboard adds the ui role's web pages (roles/ui/web) to mux, read
// through the same answers as the JSON API and the query methods.
// Operators sign in with their API token and answer gates through the
// JSON API's own path (answer), pause, resume and cancel runs through it
// too (brake), and approve or reject proposals (decide; nil: no controls).
func (n *Node) startDashboard(mux *http.ServeMux, operator func(string) (string, []string, error), answer web.Answer, brake web.Brake, decide web.Decide) error {
	src := web.Source{Runs: n.runReads(), Audit: guard(n, n.audit), Nodes: guard(n, n.nodesList),
		Alarms: guard(n, n.alarmsList), Gates: guard(n, n.runs.GatesPage), Operator: operator, Answer: answer, Brake: brake, Decide: decide,
		Refused: func(err error) bool { return errors.Is(err, ui.ErrOperatorRefused) }}
	if f := n.follower; f != nil {
		src.Changed = f.Changed
	}
	if n.conn != nil {
		src.Output = n.stepOutput
	}
	if n.plugins != nil {
		src.Plugin = n.dashboardPlugin // pluginlist.go
	}
	if n.improve != nil {
		list, show := guard(n, n.proposalsList), guard(n, n.proposalsShow)
		src.Proposals = func(ctx context.Context) ([]improve.Proposal, error) {
			return list(ctx, api.ProposalsRequest{})
		}
		src.Proposal = func(ctx context.Context, id string) (improve.Proposal, error) {
			return show(ctx, api.ProposalRequest{ID: id})
		}
	}
	d, err := web.New(src, web.Options{Log: n.log.With("part", "dashboard")})
	if err != nil {
		return fmt.Errorf("node: dashboard: %w", err)
	}
	d.Register(mux)
	n.dash = d
	return nil
}

// serveHTTP listens on addr and serves h there until stopHTTP.
func (n *Node) serveHTTP(into *httpServer, addr, what string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		flag := "--" + what + "-listen"
		return fmt.Errorf("node: %s listen %s (choose another with %s): %w", what, addr, flag, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	into.srv, into.ln = srv, ln
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error(what+" server", "err", err)
		}
	}()
	return nil
}

// stopHTTP shuts the HTTP servers down (a listener opened by a failed
// start too).
func (n *Node) stopHTTP(ctx context.Context) {
	if n.dash != nil {
		// The dashboard's live streams would keep Shutdown waiting.
		n.dash.Close()
		n.dash = nil
	}
	for _, h := range []*httpServer{&n.http, &n.probe, &n.debug} {
		if h.srv != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = h.srv.Shutdown(sctx)
			cancel()
		} else if h.ln != nil {
			h.ln.Close()
		}
		h.srv = nil
	}
}

// debugMux serves net/http/pprof's handlers under /debug/pprof/ (the
// package's init registers them on http.DefaultServeMux, which the node
// never serves).
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// errNoRevocations marks a token a node cannot judge: it keeps no
// ledger, so it cannot tell whether the token's credential is revoked.
var errNoRevocations = errors.New("this node keeps no ledger, so it cannot tell whether the token's credential is revoked")

// refusedHint is what an operator whose credential the ledger refuses
// can do.
const refusedHint = "an administrator issues new credentials: agentctl keys operator NAME --root DIR --out FILE"

// tokenChecker is the one check of an operator's API token, made on
// every request that carries one (requireToken, the ui's gate answers):
// the token is well signed by a credential of root, an operator's, and at
// most trust.MaxAPITokenTTL long (trust.VerifyAPIToken, an error matching
// trust.ErrBadToken); and the ledger, as committed now, does not refuse
// its credential — revoked by a credential.revoked, or issued by a
// retired root (ledger.Store.CheckCredential, an error matching
// ui.ErrOperatorRefused). Without a ledger (store nil: an executor-only
// node, or a damaged ledger) no token passes (errNoRevocations): a
// revocation must hold on every node that serves the API.
func tokenChecker(root *trust.Root, store *ledger.Store) func(token string) (*trust.Credential, error) {
	return func(token string) (*trust.Credential, error) {
		cred, err := trust.VerifyAPIToken(root, token, time.Now())
		if err != nil {
			return nil, err
		}
		if store == nil {
			return nil, errNoRevocations
		}
		if err := store.CheckCredential(cred); err != nil {
			return nil, fmt.Errorf("%w: %w", ui.ErrOperatorRefused, err)
		}
		return cred, nil
	}
}

// requireToken lets through the requests that carry "Authorization:
// Bearer TOKEN" with an API token (trust.APIToken, agentctl keys api-token)
// that check accepts, or the same token in the dashboard's session
// cookie (a browser signed in at /login), checked on every request; the
// others get 401 (no token, or a bad one), 403 (the ledger refuses its
// credential: revoked) or 503 (the node cannot check revocations), and
// why. The dashboard's sign-in page and assets need none: signing in
// checks the token it is given.
func requireToken(check func(string) (*trust.Credential, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := path.Clean(r.URL.Path); p == "/login" || strings.HasPrefix(p, "/assets/") {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			if c, err := r.Cookie(web.SessionCookie); err == nil {
				tok = c.Value
			}
		}
		if strings.TrimSpace(tok) == "" {
			unauthorized(w, "this endpoint needs an operator token: Authorization: Bearer $(agentctl keys api-token), or sign in at /login")
			return
		}
		if _, err := check(strings.TrimSpace(tok)); err != nil {
			switch {
			case errors.Is(err, ui.ErrOperatorRefused):
				http.Error(w, err.Error()+"\n"+refusedHint, http.StatusForbidden)
			case errors.Is(err, errNoRevocations):
				http.Error(w, err.Error()+": use the HTTP API of a ledger node (and serve probes on probe_listen)", http.StatusServiceUnavailable)
			default:
				unauthorized(w, err.Error())
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentic"`)
	http.Error(w, why, http.StatusUnauthorized)
}
