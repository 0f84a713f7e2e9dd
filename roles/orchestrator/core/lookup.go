package core

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Lookup errors.
var (
	// ErrNotFound: no run has that id or id prefix.
	ErrNotFound = errors.New("orchestrator: run not found")
	// ErrAmbiguous: several runs share that id prefix; the error lists them.
	ErrAmbiguous = errors.New("orchestrator: ambiguous run id prefix")
)

// Run returns the live run with id idOrPrefix, or the only live run whose id
// starts with it. Errors wrap ErrNotFound or ErrAmbiguous (naming the
// candidates). Finished runs are not in State: the run index has them.
func (s *State) Run(idOrPrefix string) (*Run, error) {
	if r := s.Runs[idOrPrefix]; r != nil {
		return r, nil
	}
	if idOrPrefix == "" {
		return nil, fmt.Errorf("%w: empty id", ErrNotFound)
	}
	var found []string
	for id := range s.Runs {
		if strings.HasPrefix(id, idOrPrefix) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: %q", ErrNotFound, idOrPrefix)
	case 1:
		return s.Runs[found[0]], nil
	}
	sort.Strings(found)
	return nil, fmt.Errorf("%w: %q matches %s", ErrAmbiguous, idOrPrefix, strings.Join(found, ", "))
}

// RunsView returns the views of the live runs with the given status (""
// for all), newest first, at most limit of them (limit <= 0: all).
func (s *State) RunsView(status RunStatus, limit int) []RunView {
	runs := make([]*Run, 0, len(s.Runs))
	for _, r := range s.Runs {
		if status == "" || r.Status == status {
			runs = append(runs, r)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Order > runs[j].Order })
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
	}
	out := make([]RunView, len(runs))
	for i, r := range runs {
		out[i] = r.View()
	}
	return out
}
