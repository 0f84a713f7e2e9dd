package api

import (
	"fmt"
	"strings"
)

// MaxListed caps how many candidates an ambiguity error names.
const MaxListed = 10

// MatchID resolves an id or unique id prefix among ids. An exact match
// wins; otherwise exactly one id must start with prefix. kind names the
// thing in messages ("run"). Errors wrap ErrNotFound or ErrAmbiguous (see
// Ambiguous) and carry a hint.
func MatchID(kind string, ids []string, prefix string) (string, error) {
	if prefix == "" {
		return "", WithHint(fmt.Errorf("%w: empty %s id", ErrBadRequest, kind), "give a "+kind+" id or a prefix of one")
	}
	var found []string
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
		if strings.HasPrefix(id, prefix) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", WithHint(fmt.Errorf("%w: no %s matches %q", ErrNotFound, kind, prefix), "list them with: agentctl "+kind+" list")
	case 1:
		return found[0], nil
	}
	return "", Ambiguous(kind, prefix, found, len(found))
}

// Ambiguous is the error of an id prefix that several kinds ("run") share:
// it wraps ErrAmbiguous, hints to give more characters, and lists the
// candidates one per line, at most MaxListed of them, then how many more
// there are:
//
//	api: ambiguous id prefix: "0190" matches 12 runs:
//	  0190aaaa-0000-7000-8000-000000000001
//	  …
//	  … and 2 more
//
// total is how many ids match; a total of 0 or less means more than
// len(candidates) but unknown (a lookup that stopped counting), said as
// "more than N" and "… and more".
func Ambiguous(kind, prefix string, candidates []string, total int) error {
	listed := candidates[:min(len(candidates), MaxListed)]
	var b strings.Builder
	if total > 0 {
		fmt.Fprintf(&b, "%q matches %d %ss:", prefix, total, kind)
	} else {
		fmt.Fprintf(&b, "%q matches more than %d %ss:", prefix, len(listed), kind)
	}
	for _, id := range listed {
		b.WriteString("\n  " + id)
	}
	switch {
	case total <= 0:
		b.WriteString("\n  … and more")
	case total > len(listed):
		fmt.Fprintf(&b, "\n  … and %d more", total-len(listed))
	}
	return WithHint(fmt.Errorf("%w: %s", ErrAmbiguous, b.String()), "give more characters of the id")
}
