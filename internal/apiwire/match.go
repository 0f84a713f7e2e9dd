package apiwire

import (
	"fmt"
	"strings"
)

// MaxListed caps how many candidates an ambiguity error names.
const MaxListed = 10

// MatchedBy says how a short form named an id.
type MatchedBy string

// How ResolveID matched.
const (
	MatchedExact  MatchedBy = "exact"
	MatchedPrefix MatchedBy = "prefix"
	MatchedSuffix MatchedBy = "suffix"
)

// MatchID resolves an id or unique id prefix among ids. An exact match
// wins; otherwise exactly one id must start with prefix. kind names the
// thing in messages ("run"). Errors wrap ErrNotFound or ErrAmbiguous (see
// Ambiguous) and carry a hint. ResolveID also takes the end of an id.
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

// ResolveID resolves s among ids: the id itself wins; otherwise exactly
// one id must start or end with s, and by says which. Time-ordered ids
// (UUIDv7) of the same minutes share their first dozen characters, and
// end in random ones: a few characters from the end name one. kind names
// the thing in messages ("run"). Errors wrap ErrNotFound or ErrAmbiguous
// (see Ambiguous: the candidates by start and by end) and carry a hint.
func ResolveID(kind string, ids []string, s string) (id string, by MatchedBy, err error) {
	if s == "" {
		return "", "", WithHint(fmt.Errorf("%w: empty %s id", ErrBadRequest, kind), "give a "+kind+" id, or its start or its end")
	}
	var found []string
	suffix := false // some id ends with s
	for _, id := range ids {
		if id == s {
			return id, MatchedExact, nil
		}
		start, end := strings.HasPrefix(id, s), strings.HasSuffix(id, s)
		if start || end {
			found = append(found, id)
		}
		suffix = suffix || end
	}
	switch len(found) {
	case 0:
		return "", "", WithHint(fmt.Errorf("%w: no %s matches %q", ErrNotFound, kind, s), "list them with: agentctl "+kind+" list")
	case 1:
		if strings.HasPrefix(found[0], s) {
			return found[0], MatchedPrefix, nil
		}
		return found[0], MatchedSuffix, nil
	}
	if suffix {
		return "", "", ambiguous(kind, s, " by their start or end", found, len(found), "give more characters of the start or the end of the id")
	}
	return "", "", Ambiguous(kind, s, found, len(found))
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
	return ambiguous(kind, prefix, "", candidates, total, "give more characters of the id")
}

// ambiguous is Ambiguous saying how the candidates match (how) and with
// hint.
func ambiguous(kind, prefix, how string, candidates []string, total int, hint string) error {
	listed := candidates[:min(len(candidates), MaxListed)]
	var b strings.Builder
	if total > 0 {
		fmt.Fprintf(&b, "%q matches %d %ss%s:", prefix, total, kind, how)
	} else {
		fmt.Fprintf(&b, "%q matches more than %d %ss%s:", prefix, len(listed), kind, how)
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
	return WithHint(fmt.Errorf("%w: %s", ErrAmbiguous, b.String()), hint)
}
