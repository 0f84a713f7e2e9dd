package memory

import (
	"slices"
	"strings"
	"time"
)

// ListOptions filter and page a listing of facts (Page).
type ListOptions struct {
	// Scope keeps the facts of one scope; "" every scope.
	Scope string
	// Prefix keeps the facts whose key starts with it.
	Prefix string
	// Tag keeps the facts that carry it.
	Tag string
	// Quarantined keeps only the quarantined facts (memory quarantine
	// ls); otherwise quarantined and released facts are both listed.
	Quarantined bool
	// After is the cursor: the page starts after the fact "scope/key"
	// (Next of the page before).
	After string
	// Limit is the page size: DefaultListLimit when <= 0, at most
	// MaxListLimit.
	Limit int
}

// Listing page bounds.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListPage is one page of facts.
type ListPage struct {
	Facts []Fact
	// Next is the cursor of the next page ("" when this is the last).
	Next string
}

// Cursor is the cursor that names f: "scope/key".
func Cursor(f Fact) string { return f.Scope + "/" + f.Key }

// Page returns the live facts opts selects, sorted by scope and key, one
// page at a time.
func (m *Memory) Page(opts ListOptions, now time.Time) ListPage {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	m.mu.RLock()
	var out []Fact
	for sc, facts := range m.mu.facts {
		if opts.Scope != "" && sc != opts.Scope {
			continue
		}
		for key, f := range facts {
			if !strings.HasPrefix(key, opts.Prefix) || expired(f, now) || (opts.Quarantined && !f.Quarantined) {
				continue
			}
			if opts.Tag != "" && !slices.Contains(f.Tags, opts.Tag) {
				continue
			}
			if opts.After != "" && Cursor(f) <= opts.After {
				continue
			}
			out = append(out, f)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Fact) int { return strings.Compare(Cursor(a), Cursor(b)) })
	var p ListPage
	if len(out) > limit {
		out = out[:limit]
		p.Next = Cursor(out[limit-1])
	}
	p.Facts = out
	return p
}
