package apiwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

// Page is one page of a listing, the one shape every paged method answers
// with (runs.list, the steps of runs.get, audit, ledger.export). Items come
// in the listing's order. End is true when the listing has nothing after
// this page (as of the answer); otherwise Next is the cursor to ask for the
// next page with. A client never infers the end from a short page: a page
// is cut by count and by encoded size, so it may be short and not the last.
type Page[T any] struct {
	Items []T `json:"items"`
	// Next is the opaque cursor of the next page; "" when End, except in
	// a listing that grows at its end (audit, ledger.export), where it is
	// the cursor to ask with later for what has been added since.
	Next string `json:"next,omitempty"`
	// End says that nothing follows this page.
	End bool `json:"end"`
}

// ErrItemTooLarge is returned by Pager.Add for an item that alone does not
// fit in a page: the caller must send a smaller form of it (for example
// without its signed envelope, which the client then fetches on its own).
var ErrItemTooLarge = errors.New("api: item larger than a page")

// replyOverhead is what a reply adds around a page's items: the Reply and
// Page wrappers, the cursor, NATS headers with the answer's signature
// (the signer's credential is in it). Generous on purpose.
const replyOverhead = 12 << 10

// Pager builds a Page whose encoded size is known while it is filled, so
// that no reply can exceed the connection's max payload by construction.
// Items are encoded once, when added.
type Pager struct {
	maxItems int
	maxBytes int
	size     int
	items    []json.RawMessage
}

// NewPager returns a pager for at most maxItems items whose encoded page
// fits in maxPayload bytes (NATS's max payload: nats.Conn.MaxPayload()),
// with room for the reply around it.
func NewPager(maxItems int, maxPayload int64) *Pager {
	return &Pager{maxItems: max(1, maxItems), maxBytes: max(1, int(maxPayload)-replyOverhead)}
}

// Add encodes item and appends it if it fits. It returns false, nil when the
// page is full (by count or size): the item is not added, and the caller
// ends the page with the cursor of the item before it. It returns
// ErrItemTooLarge when the item could not fit even in an empty page.
func (p *Pager) Add(item any) (bool, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return false, fmt.Errorf("api: encode page item: %w", err)
	}
	return p.AddRaw(b)
}

// AddRaw is Add for an item already encoded as JSON.
func (p *Pager) AddRaw(b json.RawMessage) (bool, error) {
	cost := len(b) + 1 // the comma
	switch {
	case cost > p.maxBytes:
		return false, fmt.Errorf("%w: %d bytes, a page holds %d", ErrItemTooLarge, len(b), p.maxBytes)
	case len(p.items) >= p.maxItems || p.size+cost > p.maxBytes:
		return false, nil
	}
	p.items = append(p.items, b)
	p.size += cost
	return true, nil
}

// Len is the number of items added.
func (p *Pager) Len() int { return len(p.items) }

// Full reports whether the page holds its maximum count of items.
func (p *Pager) Full() bool { return len(p.items) >= p.maxItems }

// Page returns the page: next is the cursor after its last item, end whether
// the listing ends with it (next is dropped then).
func (p *Pager) Page(next string, end bool) Page[json.RawMessage] {
	if end {
		next = ""
	}
	return p.Continued(next, end)
}

// Continued returns the page of a listing that grows at its end (audit,
// ledger.export): next is kept even at the end, as the cursor a follower
// asks with later for what has been added since.
func (p *Pager) Continued(next string, end bool) Page[json.RawMessage] {
	items := p.items
	if items == nil {
		items = []json.RawMessage{}
	}
	return Page[json.RawMessage]{Items: items, Next: next, End: end}
}

// Walk yields the items of a listing from the page at cursor ("" for the
// first) on: it asks fetch for one page after another, following Next,
// until a page says End. It never takes a short page for the end. It stops
// at the first error, which it yields; a page that is not the end but
// gives no new cursor is an error too (following it would ask for the same
// page forever).
func Walk[T any](ctx context.Context, cursor string, fetch func(ctx context.Context, cursor string) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for {
			p, err := fetch(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.End {
				return
			}
			if p.Next == "" || p.Next == cursor {
				yield(zero, fmt.Errorf("api: a page that is not the last gives no next cursor (asked with %q)", cursor))
				return
			}
			cursor = p.Next
		}
	}
}
