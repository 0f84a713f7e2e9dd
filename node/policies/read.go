package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
)

// Page sizes of policy.list.
const (
	DefaultListPage = 100
	MaxListPage     = 1000
)

// noPolicyHint is what to do when the ledger holds no policy.
const noPolicyHint = "agentd records the default policy when its leader starts; or agentctl policy apply"

// store returns the attached store.
func (x *Index) store() (*ledger.Store, error) {
	if x == nil {
		return nil, ErrNotAttached
	}
	st := x.st.Load()
	if st == nil {
		return nil, ErrNotAttached
	}
	return st, nil
}

// Show answers policy.show: the version req asks for, or with Version 0
// the one in force, with its text. A ledger without a policy, or without
// that version, is api.ErrNotFound with a hint.
func (x *Index) Show(ctx context.Context, req api.PolicyRequest) (api.PolicyVersion, error) {
	st, err := x.store()
	if err != nil {
		return api.PolicyVersion{}, err
	}
	if req.Version < 0 {
		return api.PolicyVersion{}, api.WithHint(fmt.Errorf("%w: policy version %d", api.ErrBadRequest, req.Version),
			"versions are 1, 2, …; 0 (or none) asks for the one in force")
	}
	var raw []byte
	if req.Version == 0 {
		raw, err = newest(st)
		if err != nil {
			return api.PolicyVersion{}, err
		}
		if raw == nil {
			return api.PolicyVersion{}, api.WithHint(fmt.Errorf("%w: the ledger holds no policy", api.ErrNotFound), noPolicyHint)
		}
	} else {
		raw, err = st.IndexGet(Name, versionKey(req.Version))
		if errors.Is(err, ledger.ErrNotFound) {
			return api.PolicyVersion{}, x.noVersion(st, req.Version)
		} else if err != nil {
			return api.PolicyVersion{}, fmt.Errorf("policies: read version %d: %w", req.Version, err)
		}
	}
	// One version is one item: it is answered whole or refused, never cut.
	if _, err := api.NewPager(1, api.MaxPayload(ctx)).AddRaw(raw); err != nil {
		return api.PolicyVersion{}, api.WithHint(fmt.Errorf("%w: policy version %d: %w", api.ErrTooLarge, req.Version, err),
			"read it with a client on a NATS server with a larger max_payload")
	}
	var v api.PolicyVersion
	if err := json.Unmarshal(raw, &v); err != nil {
		return api.PolicyVersion{}, fmt.Errorf("policies: decode version %d: %w", req.Version, err)
	}
	return v, nil
}

// noVersion explains a version the ledger does not hold.
func (x *Index) noVersion(st *ledger.Store, v int64) error {
	raw, err := newest(st)
	if err != nil {
		return err
	}
	if raw == nil {
		return api.WithHint(fmt.Errorf("%w: policy version %d: the ledger holds no policy", api.ErrNotFound, v), noPolicyHint)
	}
	var in api.PolicyVersion
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("policies: decode the version in force: %w", err)
	}
	return api.WithHint(fmt.Errorf("%w: policy version %d: the ledger holds versions 1 to %d", api.ErrNotFound, v, in.Version),
		"agentctl policy history lists them")
}

// newest returns the entry of the version in force, nil when none.
func newest(st *ledger.Store) ([]byte, error) {
	for e, err := range st.IndexScan(Name, []byte("v/"), []byte("v0"), true) {
		if err != nil {
			return nil, fmt.Errorf("policies: read the version in force: %w", err)
		}
		return e.Value, nil
	}
	return nil, nil
}

// List answers policy.list: the versions, newest first, without their
// text, in pages cut by count and encoded size. The cursor is the last
// version of the previous page.
func (x *Index) List(ctx context.Context, req api.PolicyListRequest) (api.Page[json.RawMessage], error) {
	st, err := x.store()
	if err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	upper := []byte("v0") // the end of v/
	if req.Cursor != "" {
		after, err := strconv.ParseInt(req.Cursor, 10, 64)
		if err != nil || after < 1 {
			return api.Page[json.RawMessage]{}, api.WithHint(fmt.Errorf("%w: cursor %q is not one policy.list gave", api.ErrBadRequest, req.Cursor),
				"ask with the next cursor of the previous page, or without one to start again")
		}
		upper = versionKey(after)
	}
	p := api.NewPager(api.PageLimit(req.Limit, DefaultListPage, MaxListPage), api.MaxPayload(ctx))
	last, end := req.Cursor, true
	for e, err := range st.IndexScan(Name, []byte("v/"), upper, true) {
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("policies: list: %w", err)
		}
		var v api.PolicyVersion
		if err := json.Unmarshal(e.Value, &v); err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("policies: list: decode %x: %w", e.Key, err)
		}
		v.Text = ""
		added, err := p.Add(v)
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("policies: list: version %d: %w", v.Version, err)
		}
		if !added {
			end = false
			break
		}
		last = strconv.FormatInt(v.Version, 10)
	}
	return p.Page(last, end), nil
}
