package runindex

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// Name is the index's name in the ledger: its entries live under "i/runs/".
const Name = "runs"

// Version is the layout version of the index's entries. A stored index of
// another version is rebuilt from the ledger when the index is attached.
// Bump it when the keys change, and also when what an entry holds changes
// (a field of RunSummary or StepView, or how the fold computes a view), so
// that no row of the old shape survives. Version 2: summaries and step
// rows carry codes. Version 3: the open gates (g/ keys). Version 4:
// operators' ratings (f/ keys).
const Version uint32 = 4

// Errors of the read methods. Test with errors.Is.
var (
	// ErrNotFound: no run has that id or id prefix.
	ErrNotFound = errors.New("runindex: run not found")
	// ErrAmbiguous: several runs share that id prefix. The error is an
	// *AmbiguousError naming a few of them.
	ErrAmbiguous = errors.New("runindex: ambiguous run id prefix")
	// ErrBadCursor: a cursor that no listing made.
	ErrBadCursor = errors.New("runindex: bad cursor")
	// ErrNotAttached: a read before Attach.
	ErrNotAttached = errors.New("runindex: not attached to a ledger")

	errAttached = errors.New("runindex: already attached")
)

// Index is the run index. Its write side (the ledger.Indexer methods) is
// called by the ledger's appending goroutine; its read side (Runs, Run,
// Steps, Leader) is safe for concurrent use from any goroutine.
type Index struct {
	log *slog.Logger
	st  atomic.Pointer[ledger.Store] // set by Attach; reads only
	hot *hot                         // the write side's state

	mu struct {
		sync.Mutex
		leader string
		epoch  uint64
	}
}

var _ ledger.BatchIndexer = (*Index)(nil)

// New returns an index with the empty state; it reads and writes nothing
// until Attach.
func New(logger *slog.Logger) *Index {
	if logger == nil {
		logger = slog.Default()
	}
	return &Index{log: logger, hot: newHot()}
}

// Attach attaches the index to st (st.AttachIndexer: the index is restored
// from its snapshot plus the records after it, caught up, or rebuilt) and
// keeps st for reads. Call it before the first Append, once.
func (x *Index) Attach(st *ledger.Store) error {
	if x.st.Load() != nil {
		return errAttached
	}
	if err := st.AttachIndexer(x); err != nil {
		return fmt.Errorf("runindex: attach: %w", err)
	}
	x.st.Store(st)
	return nil
}

// store returns the attached store.
func (x *Index) store() (*ledger.Store, error) {
	st := x.st.Load()
	if st == nil {
		return nil, ErrNotAttached
	}
	return st, nil
}

// Leader returns the leader and epoch of the newest leader.elected the
// index has folded and the ledger committed ("" and 0 before any).
func (x *Index) Leader() (node string, epoch uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.mu.leader, x.mu.epoch
}

// Query selects runs for Runs. The zero Query lists every run.
type Query struct {
	// Status selects runs with this status ("" = any). It reads the
	// by-status index: every run read matches.
	Status string
	// Goal selects runs whose goal contains it, ignoring case. It filters
	// as it scans: at most ScanBudget runs that do not match are read per
	// Runs call (see Entry).
	Goal string
	// Since and Until select runs created (stream time of their
	// goal.submitted) in [Since, Until). The zero time is unbounded.
	Since, Until time.Time
	// After continues a listing after the entry whose Cursor it is: runs
	// older than it, newest first.
	After string
	// Before lists the runs newer than the entry whose Cursor it is —
	// nearest first, that is oldest first: a caller paging backwards takes
	// its page size and reverses the page to show it newest first. With
	// Before set, After (if also set) bounds the other end.
	Before string
}

// Entry is one item of a listing.
type Entry struct {
	// Summary is the run. Nil marks a scan checkpoint: a Goal filter read
	// ScanBudget runs that did not match; the listing ends there and the
	// caller ends its page with Cursor (the next page resumes the scan).
	Summary *core.RunSummary
	// Cursor is opaque and URL-safe: Query.After (or Before, when listing
	// backwards) set to it resumes the listing after this entry.
	Cursor string
}

// ScanBudget is the most runs one Runs call reads that do not match its Goal
// filter before it yields a checkpoint and ends: a filter that matches
// nothing costs a bounded scan per page, never a scan of the history.
const ScanBudget = 5000

// scanBudget is ScanBudget; tests lower it.
var scanBudget = ScanBudget

// AmbiguousError is the error of a prefix several runs share. It matches
// ErrAmbiguous.
type AmbiguousError struct {
	// Prefix is the prefix looked up.
	Prefix string
	// Candidates are the first few run ids with the prefix, in id order.
	Candidates []string
	// More is set when more runs than Candidates have the prefix.
	More bool
}

// MaxCandidates is the most run ids an AmbiguousError names.
const MaxCandidates = 5

func (e *AmbiguousError) Error() string {
	more := ""
	if e.More {
		more = " and more"
	}
	return fmt.Sprintf("%v: %q matches %s%s", ErrAmbiguous, e.Prefix, strings.Join(e.Candidates, ", "), more)
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// StepEntry is one step of a run: its position in the plan (0-based) and
// its view.
type StepEntry struct {
	Pos  int
	View core.StepView
	// Raw is View as stored: its JSON encoding, for callers that pass
	// steps on without encoding them again.
	Raw json.RawMessage
}

// Name is "runs".
func (x *Index) Name() string { return Name }

// Version is the layout version.
func (x *Index) Version() uint32 { return Version }
