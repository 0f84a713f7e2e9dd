package research_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/agentic-dev/agentic/roles/research"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

// pages serves a few pages, a redirect to another host, and a body
// larger than the tests' bound.
func pages(t *testing.T, other string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/ports.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><p>The service   listens on <b>port 8443</b> &amp; nothing else.</p><script>var x='port 9999';</script></body></html>")
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+"/ports.html", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func store(t *testing.T) (research.Store, jetstream.JetStream) {
	c := bustest.Connect(t, bustest.Server(t))
	ctx := context.Background()
	if err := artifact.Ensure(ctx, c.JS, artifact.Config{}); err != nil {
		t.Fatal(err)
	}
	return research.NewLazyStore(c.JS), c.JS
}

func allowOnly(t *testing.T, hostports ...string) func(string) (bool, string) {
	p := policy.Default()
	p.Scopes.Network = hostports
	return p.NetworkAllowed
}

func TestFetchStoresSourcesByHash(t *testing.T) {
	st, _ := store(t)
	srv := pages(t, "http://localhost:1")
	host := strings.TrimPrefix(srv.URL, "http://")
	f := research.Fetcher{Store: st, Allow: allowOnly(t, host)}
	step := event.Step{ID: "read", Kind: event.KindResearch, Sources: []string{srv.URL + "/ports.html"}}
	ctx := context.Background()
	got, err := f.Fetch(ctx, step)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d sources, want 1", len(got))
	}
	resp, err := http.Get(srv.URL + "/ports.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(body)
	if got[0].SHA256 != hex.EncodeToString(sum[:]) || got[0].Size != int64(len(body)) || got[0].Host != "127.0.0.1" || got[0].Object == "" {
		t.Fatalf("source %+v: want sha256 %x, size %d, host 127.0.0.1", got[0], sum, len(body))
	}
	text, err := research.Read(ctx, st, got[0], 0)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if !research.Contains(text, "The service listens on port 8443 & nothing else.") {
		t.Errorf("the quote is not found in %q", text)
	}
	if research.Contains(text, "listens on port 9999") || research.Contains(text, "var x='port 9999'") {
		t.Errorf("a fabricated quote, or one from a script, is found in %q", text)
	}
}

func TestFetchRefusesHostsOutsideScopes(t *testing.T) {
	st, _ := store(t)
	other := pages(t, "http://localhost:1")
	srv := pages(t, strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
	host := strings.TrimPrefix(srv.URL, "http://")
	f := research.Fetcher{Store: st, Allow: allowOnly(t, host)}
	ctx := context.Background()

	// A source outside the list: refused before any request, located.
	_, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/ports.html", "http://example.invalid:8080/x"}})
	var ref *research.Refusal
	if !errors.As(err, &ref) || !errors.Is(err, research.ErrRefused) {
		t.Fatalf("err %v: want a refusal", err)
	}
	if ref.Step != "read" || ref.Index != 1 || ref.Host != "example.invalid:8080" || !strings.Contains(ref.Reason, "scopes.network") {
		t.Errorf("refusal %+v: want step read, index 1, host example.invalid:8080 and the rule", ref)
	}

	// A redirect to a host outside the list: refused at the redirect.
	_, err = f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/away"}})
	if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "redirect to") || !strings.HasPrefix(ref.Host, "localhost:") {
		t.Fatalf("err %v: want a refusal of the redirect to localhost", err)
	}

	// An empty scopes.network allows nothing.
	f.Allow = allowOnly(t)
	if _, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/ports.html"}}); !errors.Is(err, research.ErrRefused) {
		t.Fatalf("err %v: want a refusal under an empty scopes.network", err)
	}
}

func TestFetchBoundsABody(t *testing.T) {
	st, _ := store(t)
	srv := pages(t, "http://localhost:1")
	host := strings.TrimPrefix(srv.URL, "http://")
	f := research.Fetcher{Store: st, Allow: allowOnly(t, host), MaxBytes: 1000, Timeout: 10 * time.Second}
	_, err := f.Fetch(context.Background(), event.Step{ID: "read", Sources: []string{srv.URL + "/big"}})
	if err == nil || !strings.Contains(err.Error(), "1000 bytes") || !strings.Contains(err.Error(), "source 0") {
		t.Fatalf("err %v: want the bound named", err)
	}
}

func TestReadRefusesATamperedSource(t *testing.T) {
	st, _ := store(t)
	ctx := context.Background()
	info, err := st.Put(ctx, "research/s/0", strings.NewReader("the original text of the page"), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forged := sha256.Sum256([]byte("the forged text of the page"))
	_, err = research.Read(ctx, st, event.ResearchSource{Object: info.Object, SHA256: hex.EncodeToString(forged[:]), Size: info.Size}, 0)
	if !errors.Is(err, research.ErrTampered) {
		t.Fatalf("read against another hash: %v, want ErrTampered", err)
	}
	text, err := research.Read(ctx, st, event.ResearchSource{Object: info.Object, SHA256: info.SHA256, Size: info.Size}, 0)
	if err != nil || text != "the original text of the page" {
		t.Fatalf("read back: %q, %v", text, err)
	}
}

// TestFetchLeavesNoConnection: once Fetch returns, no goroutine of its
// HTTP client is left, though the page server still runs (keep-alive
// connections would hold a reader and a writer each).
func TestFetchLeavesNoConnection(t *testing.T) {
	st, _ := store(t)
	srv := pages(t, "http://localhost:1")
	host := strings.TrimPrefix(srv.URL, "http://")
	f := research.Fetcher{Store: st, Allow: allowOnly(t, host)}
	ctx := context.Background()
	// The store's own goroutines start on first use: use it once first.
	if _, err := f.Fetch(ctx, event.Step{ID: "warm", Sources: []string{srv.URL + "/ports.html"}}); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	before := goleak.IgnoreCurrent()
	if _, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/ports.html", srv.URL + "/big"}}); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines left by a fetch: %v", err)
	}
}

// TestFetchReservesTheRunsBytes: each source is reserved in the run's
// artifact total before it is stored, so that a run's sources cannot
// pass its cap: the length the server gives, or the bound of a source
// when it gives none (what is not stored is given back); a source the
// total has no room for is refused, stored nowhere, and the sources
// before it stay counted.
func TestFetchReservesTheRunsBytes(t *testing.T) {
	_, js := store(t)
	ctx := context.Background()
	arts, err := artifact.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	const page = "<html><body><p>port 8443</p></body></html>"
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, page) })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, page)
		w.(http.Flusher).Flush() // chunked: no length given
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	fetcher := func(run string, limit int64) research.Fetcher {
		return research.Fetcher{Store: research.NewLazyStore(js), Allow: allowOnly(t, host), MaxBytes: 1000,
			Reserve: func(ctx context.Context, n int64) error {
				_, err := arts.Reserve(ctx, run, n, 0, limit)
				return err
			},
			Release: func(ctx context.Context, n int64) {
				if err := arts.Release(ctx, run, n); err != nil {
					t.Errorf("release: %v", err)
				}
			}}
	}
	reserved := func(run string) int64 {
		n, err := arts.Reserved(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Room for one page, not two: the second is refused, located.
	f := fetcher("run-a", int64(len(page))+10)
	got, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/page", srv.URL + "/page?again"}})
	if !errors.Is(err, artifact.ErrRunFull) || !strings.Contains(err.Error(), "source 1") {
		t.Fatalf("err %v: want the second source refused by the run's cap", err)
	}
	if len(got) != 1 || got[0].Size != int64(len(page)) {
		t.Fatalf("stored %+v: want the first page only", got)
	}
	if n := reserved("run-a"); n != int64(len(page)) {
		t.Errorf("run-a reserved %d bytes, want the first page's %d", n, len(page))
	}

	// A body of unknown length counts at the bound of a source (1000)
	// until it is stored: a run with less room refuses it, saying why.
	f = fetcher("run-b", 500)
	if _, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/stream"}}); !errors.Is(err, artifact.ErrRunFull) || !strings.Contains(err.Error(), "length unknown") {
		t.Fatalf("err %v: want a source of unknown length refused at its bound", err)
	}
	if n := reserved("run-b"); n != 0 {
		t.Errorf("run-b reserved %d bytes after a refusal, want 0", n)
	}
	// With room for the bound, it is stored and the rest given back.
	f = fetcher("run-c", 1000)
	if got, err := f.Fetch(ctx, event.Step{ID: "read", Sources: []string{srv.URL + "/stream"}}); err != nil || len(got) != 1 {
		t.Fatalf("fetch %+v, %v: want the source stored", got, err)
	}
	if n := reserved("run-c"); n != int64(len(page)) {
		t.Errorf("run-c reserved %d bytes, want the body's %d", n, len(page))
	}
}
