package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/policy"
)

// PolicySource gives the text of one version of the policy, as the
// ledger holds it (policy.show).
type PolicySource interface {
	PolicyVersion(ctx context.Context, version int64) (*apiwire.PolicyVersion, error)
}

// APIPolicies is the PolicySource of the query API: policy.show, answered
// by a ledger node.
func APIPolicies(c apiwire.Caller) PolicySource { return apiPolicies{c} }

type apiPolicies struct{ c apiwire.Caller }

func (a apiPolicies) PolicyVersion(ctx context.Context, version int64) (*apiwire.PolicyVersion, error) {
	var pv apiwire.PolicyVersion
	if err := a.c.Call(ctx, apiwire.MethodPolicyShow, apiwire.PolicyRequest{Version: version}, &pv); err != nil {
		return nil, err
	}
	return &pv, nil
}

// Policy cache bounds.
const (
	// policyCacheSize is how many policy versions the executor keeps
	// loaded, by hash; the oldest loaded is forgotten first.
	policyCacheSize = 8
	// policyFetchTimeout bounds fetching a policy version, every attempt
	// included.
	policyFetchTimeout = 30 * time.Second
	// policyAttemptTimeout bounds one policy.show: a ledger node that
	// cannot answer (stopped, partitioned) still holds its place in the
	// query group, so an attempt that lands there is given up quickly
	// and the next goes, most likely, to another.
	policyAttemptTimeout = time.Second
)

// policies loads the policy versions assignments name — fetched once per
// hash, checked against it — and keeps the last policyCacheSize.
type policies struct {
	src PolicySource
	mu  sync.Mutex
	// byHash are the loaded policies; order is their load order.
	byHash map[string]*policy.Policy
	order  []string
	// inflight are the fetches under way, by hash: a second assignment
	// naming the same version waits for the first fetch.
	inflight map[string]*fetch
	// scopes are the scope-only policies of the file scopes in use (see
	// scopeOnly), by the scope's JSON: parsed once, not per attempt.
	scopes map[string]*policy.Policy
}

type fetch struct {
	done chan struct{}
	p    *policy.Policy
	err  error
}

func newPolicies(src PolicySource) *policies {
	return &policies{src: src, byHash: map[string]*policy.Policy{}, inflight: map[string]*fetch{}, scopes: map[string]*policy.Policy{}}
}

// scope returns scopeOnly(p), parsed once per distinct file scope (at
// most policyCacheSize are kept).
func (ps *policies) scope(p *policy.Policy) (*policy.Policy, error) {
	files, err := json.Marshal(p.Scopes.Files)
	if err != nil {
		return nil, err
	}
	k := string(files)
	ps.mu.Lock()
	sp := ps.scopes[k]
	ps.mu.Unlock()
	if sp != nil {
		return sp, nil
	}
	if sp, err = scopeOnly(files); err != nil {
		return nil, err
	}
	ps.mu.Lock()
	if len(ps.scopes) >= policyCacheSize {
		clear(ps.scopes)
	}
	ps.scopes[k] = sp
	ps.mu.Unlock()
	return sp, nil
}

// errNoSource: the executor was given no way to fetch policies.
var errNoSource = errors.New("this executor has no policy source (no query API client)")

// get returns the policy ref names, with its version: from the cache, or
// fetched and checked — its text must load and hash to ref.Hash. Failures
// are not cached: the next assignment asks again.
func (ps *policies) get(ctx context.Context, ref event.PolicyRef) (*policy.Policy, error) {
	if ps == nil || ps.src == nil {
		return nil, errNoSource
	}
	ps.mu.Lock()
	if p := ps.byHash[ref.Hash]; p != nil {
		ps.mu.Unlock()
		return p.WithVersion(ref.Version), nil
	}
	f := ps.inflight[ref.Hash]
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		ps.inflight[ref.Hash] = f
		ps.mu.Unlock()
		f.p, f.err = ps.load(ctx, ref)
		ps.mu.Lock()
		delete(ps.inflight, ref.Hash)
		if f.err == nil {
			ps.remember(ref.Hash, f.p)
		}
		ps.mu.Unlock()
		close(f.done)
	} else {
		ps.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.p.WithVersion(ref.Version), nil
}

// cached reports whether judging with ref needs nothing fetched: no
// version named (an older leader's assignment), or the version's policy
// in the cache.
func (ps *policies) cached(ref event.PolicyRef) bool {
	if ref.IsZero() {
		return true
	}
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.byHash[ref.Hash] != nil
}

// remember caches p under hash, forgetting the oldest beyond the bound.
func (ps *policies) remember(hash string, p *policy.Policy) {
	if _, ok := ps.byHash[hash]; ok {
		return
	}
	ps.byHash[hash] = p
	ps.order = append(ps.order, hash)
	for len(ps.order) > policyCacheSize {
		delete(ps.byHash, ps.order[0])
		ps.order = ps.order[1:]
	}
}

// load fetches version ref.Version and checks that its text is the policy
// ref.Hash names.
func (ps *policies) load(ctx context.Context, ref event.PolicyRef) (*policy.Policy, error) {
	ctx, cancel := context.WithTimeout(ctx, policyFetchTimeout)
	defer cancel()
	// No node answering (a ledger node starting or stopped, a NATS
	// hiccup) is asked again, each attempt bounded by policyAttemptTimeout,
	// until policyFetchTimeout; an answer, even an error, is final.
	var pv *apiwire.PolicyVersion
	var err error
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		actx, acancel := context.WithTimeout(ctx, policyAttemptTimeout)
		pv, err = ps.src.PolicyVersion(actx, ref.Version)
		acancel()
		unanswered := errors.Is(err, apiwire.ErrNoNode) || errors.Is(err, apiwire.ErrTimeout) ||
			(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil)
		if err == nil || !unanswered {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("policy.show: %w (gave up after %s)", err, policyFetchTimeout)
		case <-t.C:
		}
	}
	if err != nil {
		return nil, fmt.Errorf("policy.show: %w", err)
	}
	if pv.Version != ref.Version {
		return nil, fmt.Errorf("policy.show answered version %d", pv.Version)
	}
	p, err := policy.Parse([]byte(pv.Text), fmt.Sprintf("policy version %d", ref.Version))
	if err != nil {
		return nil, fmt.Errorf("its text does not load: %w", err)
	}
	if h := p.Hash(); h != ref.Hash {
		return nil, fmt.Errorf("its text hashes to %s, the assignment names %s", h, ref.Hash)
	}
	return p, nil
}
