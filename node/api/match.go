package api

import (
	"fmt"
	"strings"
)

// maxListed caps how many candidates an ambiguity error names.
const maxListed = 3

// MatchID resolves an id or unique id prefix among ids. An exact match
// wins; otherwise exactly one id must start with prefix. kind names the
// thing in messages ("run"). Errors wrap ErrNotFound or ErrAmbiguous and
// carry a hint.
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
	listed := found
	if len(listed) > maxListed {
		listed = listed[:maxListed]
	}
	more := ""
	if len(found) > maxListed {
		more = ", …"
	}
	return "", WithHint(
		fmt.Errorf("%w: %q matches %d %ss (%s%s)", ErrAmbiguous, prefix, len(found), kind, strings.Join(listed, ", "), more),
		"give more characters of the id")
}
