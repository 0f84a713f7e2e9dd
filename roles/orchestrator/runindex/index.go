package runindex

import (
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/orchestrator"
)

// Name is the index's name in the ledger: its entries live under "i/runs/".
const Name = "runs"

// Version is the layout version of the index's entries. A stored index of
// another version is rebuilt from the ledger when the index is attached.
const Version uint32 = 1

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
)

// Index is the run index. Its write side (the ledger.Indexer methods) is
// called by the ledger's appending goroutine; its read side (Runs, Run,
// Steps, Leader) is safe for concurrent use from any goroutine.
type Index struct {
	log *slog.Logger
	st  *ledger.Store // set by Attach; reads only

	mu struct {
		sync.Mutex
		leader string
		epoch  uint64
	}
}

var _ ledger.Indexer = (*Index)(nil)

// New returns an index with the empty state; it reads and writes nothing
// until Attach.
func New(logger *slog.Logger) *Index {
	if logger == nil {
		logger = slog.Default()
	}
	return &Index{log: logger}
}

// Attach attaches the index to st (st.AttachIndexer: the index is restored
// from its snapshot plus the records after it, caught up, or rebuilt) and
// keeps st for reads. Call it before the first Append, once.
func (x *Index) Attach(st *ledger.Store) error {
	return errors.New("runindex: not implemented")
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
	Summary *orchestrator.RunSummary
	// Cursor is opaque and URL-safe: Query.After (or Before, when listing
	// backwards) set to it resumes the listing after this entry.
	Cursor string
}

// ScanBudget is the most runs one Runs call reads that do not match its Goal
// filter before it yields a checkpoint and ends: a filter that matches
// nothing costs a bounded scan per page, never a scan of the history.
const ScanBudget = 5000

// Runs lists run summaries newest first (CreatedAt descending, then run id
// descending), or nearest first with q.Before, lazily: it reads Pebble as
// the caller iterates and stops when the caller stops. A bad cursor yields
// an error wrapping ErrBadCursor, and ends the listing.
func (x *Index) Runs(q Query) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		yield(Entry{}, errors.New("runindex: not implemented"))
	}
}

// ValidCursor returns nil for a cursor a listing made, and an error wrapping
// ErrBadCursor otherwise.
func ValidCursor(c string) error {
	return fmt.Errorf("%w: not implemented", ErrBadCursor)
}

// Run returns the summary of the run with id idOrPrefix, or of the only run
// whose id starts with it. It seeks the id index; it never scans the runs.
// Errors wrap ErrNotFound, or ErrAmbiguous (an *AmbiguousError naming a few
// of the candidates).
func (x *Index) Run(idOrPrefix string) (orchestrator.RunSummary, error) {
	return orchestrator.RunSummary{}, errors.New("runindex: not implemented")
}

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
	return "not implemented"
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// StepEntry is one step of a run: its position in the plan (0-based) and
// its view.
type StepEntry struct {
	Pos  int
	View orchestrator.StepView
}

// Steps yields the steps of the run with the full id run whose position is
// greater than after, in plan order (after = -1: from the first step). An
// unknown run yields an error wrapping ErrNotFound.
func (x *Index) Steps(run string, after int) iter.Seq2[StepEntry, error] {
	return func(yield func(StepEntry, error) bool) {
		yield(StepEntry{}, errors.New("runindex: not implemented"))
	}
}

// Name is "runs".
func (x *Index) Name() string { return Name }

// Version is the layout version.
func (x *Index) Version() uint32 { return Version }

// Index folds rec and stages the entries it changes.
func (x *Index) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	return errors.New("runindex: not implemented")
}

// Committed publishes what the committed batch folded (the leader).
func (x *Index) Committed(err error) {}

// Snapshot returns the in-memory state: the live runs.
func (x *Index) Snapshot() ([]byte, error) {
	return nil, errors.New("runindex: not implemented")
}

// Restore replaces the in-memory state with a snapshot (nil: empty).
func (x *Index) Restore(data []byte) error {
	return errors.New("runindex: not implemented")
}
