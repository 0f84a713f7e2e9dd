package apiwire

import (
	"fmt"
	"strconv"
)

// Memory 2.0 query methods (docs/memory.md).
const (
	// MethodMemoryFacts pages through the live facts, filtered by scope,
	// key prefix, tag, or the quarantined alone (MemoryFactsRequest →
	// Page of Fact), by scope then key.
	MethodMemoryFacts = "memory.facts"
	// MethodMemorySearch ranks the live facts by BM25 over their keys,
	// values and tags (MemorySearchRequest → MemorySearchPage).
	MethodMemorySearch = "memory.search"
)

// Page sizes of memory.facts and memory.search: a request's limit is
// clamped to the maximum, 0 asks for the default; pages are cut by size
// too.
const (
	DefaultFactsPage  = 100
	MaxFactsPage      = 1000
	DefaultSearchPage = 20
	MaxSearchPage     = 100
)

// Refs are a fact's provenance: the event that wrote it (id, ledger seq,
// type, signer) and, for a fact a step wrote, the run, step and attempt.
type Refs struct {
	Event   string `json:"event"`
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	Node    string `json:"node,omitempty"`
	Run     string `json:"run,omitempty"`
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// MemoryFactsRequest asks for a page of facts.
type MemoryFactsRequest struct {
	CursorRequest
	// Scope keeps one scope's facts; "" every scope.
	Scope string `json:"scope,omitempty"`
	// Prefix keeps the facts whose key starts with it.
	Prefix string `json:"prefix,omitempty"`
	// Tag keeps the facts that carry it.
	Tag string `json:"tag,omitempty"`
	// Quarantined keeps only the quarantined facts.
	Quarantined bool `json:"quarantined,omitempty"`
}

// MemorySearchRequest asks for a page of a search's hits.
type MemorySearchRequest struct {
	// Cursor is the Next of the previous page; Limit caps the page.
	CursorRequest
	// Query is the words to look for (any of them; more is better).
	Query string `json:"query"`
	// Scope keeps one scope's facts; "" every scope.
	Scope string `json:"scope,omitempty"`
	// Quarantined includes quarantined facts (operators may see them).
	Quarantined bool `json:"quarantined,omitempty"`
}

// MaxQueryLen bounds a search's query, in bytes.
const MaxQueryLen = 1024

// Validate reports what the node cannot answer.
func (r MemorySearchRequest) Validate() error {
	if r.Query == "" || len(r.Query) > MaxQueryLen {
		return WithHint(fmt.Errorf("%w: a search needs a query of 1 to %d bytes", ErrBadRequest, MaxQueryLen), `agentctl memory search "nginx reload"`)
	}
	if r.Cursor != "" {
		if n, err := strconv.Atoi(r.Cursor); err != nil || n < 0 {
			return fmt.Errorf("%w: search cursor %q is not one a search page gave", ErrBadRequest, r.Cursor)
		}
	}
	return nil
}

// SearchHit is one ranked fact.
type SearchHit struct {
	Fact  Fact    `json:"fact"`
	Score float64 `json:"score"`
}

// MemorySearchPage is a page of hits, best first, with the number of
// facts that match.
type MemorySearchPage[T any] struct {
	Page[T]
	Total int `json:"total"`
}
