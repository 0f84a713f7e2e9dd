package runindex

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// Runs lists run summaries newest first (CreatedAt descending, then run id
// descending), or nearest first with q.Before, lazily: it reads Pebble as
// the caller iterates and stops when the caller stops. A bad cursor yields
// an error wrapping ErrBadCursor, and ends the listing.
func (x *Index) Runs(q Query) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		st, err := x.store()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		lo, hi, err := q.bounds()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		if hi != nil && bytes.Compare(lo, hi) >= 0 {
			return // an empty range
		}
		prefix := []byte(prefixCreated)
		if q.Status != "" {
			prefix = statusPrefix(q.Status)
		}
		lower := append(bytes.Clone(prefix), lo...)
		upper := prefixEnd(prefix)
		if hi != nil {
			upper = append(bytes.Clone(prefix), hi...)
		}
		goal := strings.ToLower(q.Goal)
		missed := 0
		for e, err := range st.IndexScan(Name, lower, upper, q.Before == "") {
			if err != nil {
				yield(Entry{}, fmt.Errorf("runindex: list runs: %w", err))
				return
			}
			pos := e.Key[len(prefix):]
			value := e.Value
			if q.Status != "" {
				value, err = st.IndexGet(Name, createdKey(pos))
				if errors.Is(err, ledger.ErrNotFound) {
					continue // cannot be: a status key is written with its summary
				}
				if err != nil {
					yield(Entry{}, fmt.Errorf("runindex: list runs: %w", err))
					return
				}
			}
			if goal != "" && !goalMatches(value, goal) {
				if missed++; missed >= scanBudget {
					yield(Entry{Cursor: encodeCursor(pos)}, nil)
					return
				}
				continue
			}
			sum, err := decodeSummary(value)
			if err != nil {
				yield(Entry{}, fmt.Errorf("runindex: list runs: %w", err))
				return
			}
			if q.Status != "" && string(sum.Status) != q.Status {
				continue // its status moved since the status key was read
			}
			if !yield(Entry{Summary: sum, Cursor: encodeCursor(pos)}, nil) {
				return
			}
		}
	}
}

// bounds returns the range of positions q selects: lo inclusive, hi
// exclusive (nil: unbounded).
func (q Query) bounds() (lo, hi []byte, err error) {
	lo = []byte{}
	if !q.Since.IsZero() {
		lo = timeBound(q.Since)
	}
	if !q.Until.IsZero() {
		hi = timeBound(q.Until)
	}
	if q.After != "" {
		p, err := decodeCursor(q.After)
		if err != nil {
			return nil, nil, err
		}
		if hi == nil || bytes.Compare(p, hi) < 0 {
			hi = p // strictly older than the cursor's entry
		}
	}
	if q.Before != "" {
		p, err := decodeCursor(q.Before)
		if err != nil {
			return nil, nil, err
		}
		if p = append(p, 0); bytes.Compare(p, lo) > 0 {
			lo = p // strictly newer than the cursor's entry
		}
	}
	return lo, hi, nil
}

// goalMatches reports whether the summary's goal contains goal (lower
// case), decoding only the goal.
func goalMatches(summary []byte, goal string) bool {
	var g struct {
		Goal string `json:"goal"`
	}
	if json.Unmarshal(summary, &g) != nil {
		return true // let the full decode report it
	}
	return strings.Contains(strings.ToLower(g.Goal), goal)
}

func decodeSummary(b []byte) (*core.RunSummary, error) {
	var s core.RunSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode run summary: %w", err)
	}
	if s.StepCounts == nil {
		s.StepCounts = map[string]int{}
	}
	return &s, nil
}

// ValidCursor returns nil for a cursor a listing made, and an error wrapping
// ErrBadCursor otherwise.
func ValidCursor(c string) error {
	_, err := decodeCursor(c)
	return err
}

// Run returns the summary of the run with id idOrPrefix, or of the only run
// whose id starts with it. It seeks the id index; it never scans the runs.
// Errors wrap ErrNotFound, or ErrAmbiguous (an *AmbiguousError naming a few
// of the candidates).
func (x *Index) Run(idOrPrefix string) (core.RunSummary, error) {
	st, err := x.store()
	if err != nil {
		return core.RunSummary{}, err
	}
	if idOrPrefix == "" {
		return core.RunSummary{}, fmt.Errorf("%w: empty id", ErrNotFound)
	}
	v, err := st.IndexGet(Name, idKey(idOrPrefix))
	if err == nil {
		return x.summary(st, idOrPrefix, v)
	}
	if !errors.Is(err, ledger.ErrNotFound) {
		return core.RunSummary{}, fmt.Errorf("runindex: run %s: %w", idOrPrefix, err)
	}
	key := idKey(idOrPrefix)
	var ids []string
	var created []byte
	more := false
	for e, err := range st.IndexScan(Name, key, prefixEnd(key), false) {
		if err != nil {
			return core.RunSummary{}, fmt.Errorf("runindex: run %s: %w", idOrPrefix, err)
		}
		if len(ids) == MaxCandidates {
			more = true
			break
		}
		ids = append(ids, string(e.Key[len(prefixID):]))
		created = e.Value
	}
	switch len(ids) {
	case 0:
		return core.RunSummary{}, fmt.Errorf("%w: %q", ErrNotFound, idOrPrefix)
	case 1:
		return x.summary(st, ids[0], created)
	}
	return core.RunSummary{}, &AmbiguousError{Prefix: idOrPrefix, Candidates: ids, More: more}
}

// summary reads the summary of run id created at created (an r/ value).
func (x *Index) summary(st *ledger.Store, id string, created []byte) (core.RunSummary, error) {
	if len(created) != 8 {
		return core.RunSummary{}, fmt.Errorf("runindex: run %s: %w: id entry of %d bytes", id, ledger.ErrCorrupt, len(created))
	}
	b, err := st.IndexGet(Name, createdKey(position(int64(binary.BigEndian.Uint64(created)), id)))
	if err != nil {
		return core.RunSummary{}, fmt.Errorf("runindex: run %s: %w", id, err)
	}
	s, err := decodeSummary(b)
	if err != nil {
		return core.RunSummary{}, fmt.Errorf("runindex: run %s: %w", id, err)
	}
	return *s, nil
}

// Steps yields the steps of the run with the full id run whose position is
// greater than after, in plan order (after = -1, or less: from the first
// step). An unknown run yields an error wrapping ErrNotFound.
func (x *Index) Steps(run string, after int) iter.Seq2[StepEntry, error] {
	return func(yield func(StepEntry, error) bool) {
		st, err := x.store()
		if err != nil {
			yield(StepEntry{}, err)
			return
		}
		if _, err := st.IndexGet(Name, idKey(run)); err != nil {
			if errors.Is(err, ledger.ErrNotFound) {
				err = fmt.Errorf("%w: %q", ErrNotFound, run)
			}
			yield(StepEntry{}, fmt.Errorf("runindex: steps of %s: %w", run, err))
			return
		}
		if after >= math.MaxUint32 {
			return
		}
		prefix := stepPrefix(run)
		from := stepKey(run, max(after+1, 0))
		for e, err := range st.IndexScan(Name, from, prefixEnd(prefix), false) {
			if err != nil {
				yield(StepEntry{}, fmt.Errorf("runindex: steps of %s: %w", run, err))
				return
			}
			rest := e.Key[len(prefix):]
			if len(rest) != 4 {
				yield(StepEntry{}, fmt.Errorf("runindex: steps of %s: %w: step key %q", run, ledger.ErrCorrupt, e.Key))
				return
			}
			se := StepEntry{Pos: int(binary.BigEndian.Uint32(rest)), Raw: e.Value}
			if err := json.Unmarshal(e.Value, &se.View); err != nil {
				yield(StepEntry{}, fmt.Errorf("runindex: steps of %s: step %d: %w", run, se.Pos, err))
				return
			}
			if !yield(se, nil) {
				return
			}
		}
	}
}

// timeOf is the time of Unix ns.
func timeOf(ns int64) time.Time { return time.Unix(0, ns).UTC() }
