package research

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
)

// ErrRefused marks a source the policy's scopes.network does not allow.
var ErrRefused = errors.New("research: source refused by the policy")

// Defaults of a Fetcher.
const (
	// DefaultTimeout bounds one source's fetch, redirects and body
	// included.
	DefaultTimeout = 60 * time.Second
	// MaxRedirects bounds the redirects of one source.
	MaxRedirects = 5
)

// Fetcher fetches a research step's sources into a Store.
type Fetcher struct {
	// Store receives the bodies.
	Store Store
	// Allow judges a "host:port" (policy.NetworkAllowed): whether it may
	// be reached, and why not.
	Allow func(hostport string) (bool, string)
	// Client makes the requests; nil means a client of its own (no
	// proxy from the environment: the policy judges the host reached).
	Client *http.Client
	// Timeout bounds one source; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxBytes bounds one body; zero means event.MaxSourceBytes.
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Reserve, when set, is asked for a source's bytes before they are
	// stored (the run's artifact total: artifact.Store.Reserve, so that
	// the sources of steps fetching at once cannot together pass the
	// run's cap): the body's length when the server says it, else the
	// bound of a source (MaxBytes). Its error stops the fetch, nothing of
	// that source stored.
	Reserve func(ctx context.Context, n int64) error
	// Release gives back what Reserve reserved and was not stored (a
	// store that failed, or a body shorter than its bound).
	Release func(ctx context.Context, n int64)
}

// Refusal is a source the policy refused, located: the step, the
// source's index, the host and the rule's reason.
type Refusal struct {
	Step   string
	Index  int
	URL    string
	Host   string
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("research step %s, source %d (%s): host %s refused by scopes.network: %s", r.Step, r.Index, r.URL, r.Host, r.Reason)
}

// Is makes errors.Is(r, ErrRefused) hold.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Judge checks every source of step s against allow before anything is
// fetched (what the leader judges at assignment too): the first refusal,
// located, or nil.
func Judge(s event.Step, allow func(string) (bool, string)) error {
	for i, src := range s.Sources {
		hp, err := event.SourceHostPort(src)
		if err != nil {
			return &Refusal{Step: s.ID, Index: i, URL: src, Reason: err.Error()}
		}
		if ok, why := allow(hp); !ok {
			return &Refusal{Step: s.ID, Index: i, URL: src, Host: hp, Reason: why}
		}
	}
	return nil
}

// Fetch fetches every source of research step s, in order, into the
// store, each as the artifact ArtifactName(s.ID, index), and returns what
// it stored. The first failure stops it: a
// refusal (ErrRefused), a fetch that failed or a body over the bound;
// the sources stored before it are returned with the error.
func (f *Fetcher) Fetch(ctx context.Context, s event.Step) ([]event.ResearchSource, error) {
	if err := Judge(s, f.Allow); err != nil {
		return nil, err
	}
	var out []event.ResearchSource
	for i, src := range s.Sources {
		rs, err := f.one(ctx, s.ID, i, src)
		if err != nil {
			return out, err
		}
		out = append(out, rs)
	}
	return out, nil
}

// ArtifactName is the artifact name, in its run, of source index of a
// research step: "research/<step>/<index>".
func ArtifactName(step string, index int) string {
	return fmt.Sprintf("research/%s/%d", step, index)
}

// one fetches source i.
func (f *Fetcher) one(ctx context.Context, step string, i int, src string) (event.ResearchSource, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var refused error
	client := f.client(func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("research step %s, source %d (%s): more than %d redirects", step, i, src, MaxRedirects)
		}
		hp, err := event.SourceHostPort(req.URL.String())
		if err != nil {
			refused = &Refusal{Step: step, Index: i, URL: src, Reason: "redirect to " + err.Error()}
			return refused
		}
		if ok, why := f.Allow(hp); !ok {
			refused = &Refusal{Step: step, Index: i, URL: src, Host: hp, Reason: "redirect to " + req.URL.Redacted() + ": " + why}
			return refused
		}
		return nil
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): %w", step, i, src, err)
	}
	req.Header.Set("User-Agent", "agentic-research/1")
	defer client.CloseIdleConnections() // no connection (and its goroutines) outlives the fetch
	resp, err := client.Do(req)
	if refused != nil {
		return event.ResearchSource{}, refused
	}
	if err != nil {
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): fetch: %w", step, i, src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): the server answered %s", step, i, src, resp.Status)
	}
	limit := f.MaxBytes
	if limit <= 0 {
		limit = event.MaxSourceBytes
	}
	if resp.ContentLength > limit {
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): the body is %d bytes; at most %d are kept", step, i, src, resp.ContentLength, limit)
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	fetched := now().UTC()
	final := resp.Request.URL
	reserved := limit // a body of unknown length counts at its bound
	if resp.ContentLength >= 0 {
		reserved = resp.ContentLength
	}
	if f.Reserve != nil {
		if err := f.Reserve(ctx, reserved); err != nil {
			return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s), %d bytes%s: %w", step, i, src, reserved, unknownLength(resp.ContentLength), err)
		}
	}
	info, err := f.Store.Put(ctx, ArtifactName(step, i), resp.Body, artifact.PutOptions{MaxSize: limit,
		Meta: map[string]string{"url": src, "final_url": final.String(), "fetched": fetched.Format(time.RFC3339Nano)}})
	if f.Release != nil {
		back := reserved - info.Size
		if err != nil {
			back = reserved
		}
		if back > 0 {
			f.Release(context.WithoutCancel(ctx), back)
		}
	}
	switch {
	case errors.Is(err, artifact.ErrTooLarge):
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): the body is over %d bytes, the bound of a source", step, i, src, limit)
	case err != nil:
		return event.ResearchSource{}, fmt.Errorf("research step %s, source %d (%s): %w", step, i, src, err)
	}
	return event.ResearchSource{Index: i, URL: src, Final: finalIf(final, src), Host: strings.ToLower(final.Hostname()),
		SHA256: info.SHA256, Size: info.Size, ContentType: resp.Header.Get("Content-Type"), Fetched: fetched.Format(time.RFC3339),
		Object: info.Object}, nil
}

// unknownLength says, when the server did not give a body's length, that
// the bytes asked are the bound of a source.
func unknownLength(n int64) string {
	if n < 0 {
		return " (its length unknown: the bound of a source)"
	}
	return ""
}

// client is f's client with check as its redirect policy.
func (f *Fetcher) client(check func(*http.Request, []*http.Request) error) *http.Client {
	c := http.Client{Transport: &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second, DisableKeepAlives: true}}
	if f.Client != nil {
		c = *f.Client
	}
	c.CheckRedirect = check
	return &c
}

// finalIf is u as a string when it differs from src, else "".
func finalIf(u *url.URL, src string) string {
	if s := u.String(); s != src {
		return s
	}
	return ""
}
