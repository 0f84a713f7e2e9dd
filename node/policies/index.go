package policies

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Name is the index's name in the ledger: its entries live under
// "i/policies/".
const Name = "policies"

// Version is the layout version of the entries; a stored index of another
// version is rebuilt from the ledger when attached. Bump it when the keys,
// what an entry holds, or the rule that takes a policy.applied change.
const Version uint32 = 1

var (
	// ErrNotAttached: a read before Attach.
	ErrNotAttached = errors.New("policies: not attached to a ledger")

	errAttached = errors.New("policies: already attached")
)

// Index is the policy index. Its write side (the ledger.Indexer methods)
// is called by the ledger's appending goroutine; its read side (Show, List)
// is safe for concurrent use.
type Index struct {
	log *slog.Logger
	st  atomic.Pointer[ledger.Store] // set by Attach; reads only
	hot state                        // the write side's, owned by the appender
	// broken is the error of a failed commit: the state has folded
	// records the ledger does not hold, so the index refuses to go on
	// (reopening the store restores it from its snapshot).
	broken error
}

var _ ledger.Indexer = (*Index)(nil)

// state is the write side's memory, and what a snapshot holds.
type state struct {
	// Version and Hash are the policy in force (0, "": none).
	Version int64  `json:"version"`
	Hash    string `json:"hash,omitempty"`
}

// New returns an index with the empty state; it reads and writes nothing
// until Attach.
func New(logger *slog.Logger) *Index {
	if logger == nil {
		logger = slog.Default()
	}
	return &Index{log: logger}
}

// Attach attaches the index to st (st.AttachIndexer: restored from its
// snapshot plus the records after it, caught up, or rebuilt) and keeps st
// for reads. Call it before the first Append, once.
func (x *Index) Attach(st *ledger.Store) error {
	if x.st.Load() != nil {
		return errAttached
	}
	if err := st.AttachIndexer(x); err != nil {
		return fmt.Errorf("policies: attach: %w", err)
	}
	x.st.Store(st)
	return nil
}

// Name is "policies".
func (x *Index) Name() string { return Name }

// Version is the layout version.
func (x *Index) Version() uint32 { return Version }

// Index folds rec: a policy.applied or policy.recorded the rule
// (policy.Applied) takes stages its version's entry. With
// w.Discard() (a replay of records whose entries are stored) only memory
// moves.
func (x *Index) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	if x.broken != nil {
		return fmt.Errorf("policies: a failed commit left the index ahead of the ledger; reopen the store: %w", x.broken)
	}
	ev := rec.Event
	h := &x.hot
	if ev.Type != event.PolicyApplied && ev.Type != event.PolicyRecorded {
		return nil
	}
	p, d, err := policy.Applied(h.Version, ev)
	if err != nil {
		x.ignored(w, ev, err)
		return nil
	}
	h.Version, h.Hash = p.Version, p.Hash()
	v := api.PolicyVersion{
		PolicyRef: event.PolicyRef{Version: p.Version, Hash: p.Hash()},
		Name:      d.Name, Source: d.Source, Reason: d.Reason, Signer: ev.Node,
		Time: rec.StreamTime.UTC(), Seq: ev.Seq, Text: d.Text,
	}
	if d.Source == event.PolicyFromRemember {
		v.Run, v.Step = ev.Run, d.Step
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("policies: encode version %d: %w", v.Version, err)
	}
	return w.Set(versionKey(v.Version), b)
}

// ignored logs a policy.applied the rule does not take (once: not again
// while the ledger replays records whose entries are stored).
func (x *Index) ignored(w *ledger.IndexWriter, ev event.Event, err error) {
	if w.Discard() {
		return
	}
	x.log.Warn("policy.applied ignored: the policy in force stays", "seq", ev.Seq, "event", ev.ID, "signer", ev.Node, "version_in_force", x.hot.Version, "err", err)
}

// Committed records a failed commit: the index refuses further records.
func (x *Index) Committed(err error) {
	if err != nil && x.broken == nil {
		x.broken = err
	}
}

// Snapshot is the write side's state as JSON.
func (x *Index) Snapshot() ([]byte, error) {
	b, err := json.Marshal(&x.hot)
	if err != nil {
		return nil, fmt.Errorf("policies: snapshot: %w", err)
	}
	return b, nil
}

// Restore replaces the state with a snapshot's (nil: the empty state).
func (x *Index) Restore(data []byte) error {
	x.broken = nil
	if data == nil {
		x.hot = state{}
		return nil
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("policies: restore: %w", err)
	}
	x.hot = s
	return nil
}

func versionKey(v int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("v/"), uint64(v))
}
