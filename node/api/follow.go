package api

import (
	"context"
	"errors"
	"fmt"
)

// FollowPages reads a listing page after page, from cursor on ("" for the
// first page), handing each page's items to fn, until the listing ends or
// limit items were handed over (limit <= 0: every item). fetch asks for the
// page after a cursor holding at most want items (0: as many as the node
// gives). FollowPages returns the cursor that continues after the last
// item handed over, or "" when the listing ended.
//
// The end is what the server says (Page.End), never inferred from a short
// page; a page that is not the end and has no cursor that moves on is an
// error, never an endless loop.
func FollowPages[T any](ctx context.Context, cursor string, limit int,
	fetch func(ctx context.Context, cursor string, want int) (*Page[T], error), fn func(items []T) error,
) (string, error) {
	handed := 0
	for {
		if err := ctx.Err(); err != nil {
			return cursor, err
		}
		want := 0
		if limit > 0 {
			want = limit - handed
		}
		p, err := fetch(ctx, cursor, want)
		if err != nil {
			return cursor, err
		}
		if want > 0 && len(p.Items) > want {
			return cursor, fmt.Errorf("api: the node answered a page of %d items, %d asked for", len(p.Items), want)
		}
		if len(p.Items) > 0 {
			if err := fn(p.Items); err != nil {
				return cursor, err
			}
			handed += len(p.Items)
		}
		switch {
		case p.End:
			return "", nil
		case p.Next == "":
			return cursor, errors.New("api: the node answered a page that is not the last without a cursor to the next")
		case p.Next == cursor && len(p.Items) == 0:
			return cursor, fmt.Errorf("api: the listing does not move on from cursor %q", cursor)
		}
		cursor = p.Next
		if limit > 0 && handed >= limit {
			return cursor, nil
		}
	}
}
