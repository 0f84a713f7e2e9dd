package api

import (
	"context"
	"fmt"
	"iter"
)

// walk yields the items of a listing from the page at cursor ("" for the
// first) on: it asks fetch for one page after another, following Next,
// until a page says End. It never takes a short page for the end. It stops
// at the first error, which it yields; a page that is not the end but
// gives no new cursor is an error too (following it would ask for the same
// page forever).
//
// It is the same function as the exported Walk that the audit and export
// paging bring; it gives way to it when both are in one tree.
func walk[T any](ctx context.Context, cursor string, fetch func(ctx context.Context, cursor string) (*Page[T], error)) iter.Seq2[T, error] {
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
