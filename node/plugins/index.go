package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// Name is the index's name in the ledger: its entries live under
// "i/plugins/".
const Name = "plugins"

// Version is the layout version of the entries; a stored index of another
// version is rebuilt from the ledger when attached.
const Version uint32 = 1

// stateKey is the one entry.
var stateKey = []byte("s")

var (
	// ErrNotAttached: a read before Attach.
	ErrNotAttached = errors.New("plugins: not attached to a ledger")

	errAttached = errors.New("plugins: already attached")
)

// Index is the plugin index. Its write side (the ledger.Indexer methods)
// is called by the ledger's appending goroutine; its read side (List,
// Show) is safe for concurrent use.
type Index struct {
	log *slog.Logger
	st  atomic.Pointer[ledger.Store] // set by Attach; reads only
	hot plugin.State                 // the write side's, owned by the appender
	// broken is the error of a failed commit: the state has folded
	// records the ledger does not hold.
	broken error
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

// Attach attaches the index to st and keeps st for reads. Call it before
// the first Append, once.
func (x *Index) Attach(st *ledger.Store) error {
	if x.st.Load() != nil {
		return errAttached
	}
	if err := st.AttachIndexer(x); err != nil {
		return fmt.Errorf("plugins: attach: %w", err)
	}
	x.st.Store(st)
	return nil
}

// Name is "plugins".
func (x *Index) Name() string { return Name }

// Version is the layout version.
func (x *Index) Version() uint32 { return Version }

// folds are the types the index folds.
var folds = map[event.Type]bool{
	event.PluginAdded: true, event.PluginApproved: true, event.PluginRemoved: true,
	event.ExecutorOnline: true, event.NodeFailed: true, event.NodeLeft: true,
}

// Index folds rec and stages the state's entry when it changed.
func (x *Index) Index(w *ledger.IndexWriter, rec ledger.IndexRecord) error {
	if x.broken != nil {
		return fmt.Errorf("plugins: a failed commit left the index ahead of the ledger; reopen the store: %w", x.broken)
	}
	ev := rec.Event
	if !folds[ev.Type] {
		return nil
	}
	if !x.concerns(ev) {
		return nil // nothing of plugins: no write
	}
	if err := x.hot.Apply(ev); err != nil {
		if !w.Discard() {
			x.log.Warn("plugin event ignored", "seq", ev.Seq, "event", ev.ID, "type", ev.Type, "signer", ev.Node, "err", err)
		}
		return nil
	}
	if w.Discard() {
		return nil
	}
	b, err := json.Marshal(&x.hot)
	if err != nil {
		return fmt.Errorf("plugins: encode state: %w", err)
	}
	return w.Set(stateKey, b)
}

// concerns reports whether ev may change the state: a plugin event, an
// executor.online that reports plugins or replaces a report, a
// node.failed or node.left of an executor that reported.
func (x *Index) concerns(ev event.Event) bool {
	switch ev.Type {
	case event.ExecutorOnline:
		if _, ok := x.hot.Executors[ev.Node]; ok {
			return true
		}
		var d event.ExecutorOnlineData
		return ev.Decode(&d) == nil && (len(d.Tools) > 0 || len(d.Plugins) > 0)
	case event.NodeFailed, event.NodeLeft:
		var d event.NodeData
		if ev.Decode(&d) != nil {
			return false
		}
		_, ok := x.hot.Executors[d.Node]
		return ok
	}
	return true
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
		return nil, fmt.Errorf("plugins: snapshot: %w", err)
	}
	return b, nil
}

// Restore replaces the state with a snapshot's (nil: the empty state).
func (x *Index) Restore(data []byte) error {
	x.broken = nil
	x.hot = plugin.State{}
	if data == nil {
		return nil
	}
	if err := json.Unmarshal(data, &x.hot); err != nil {
		return fmt.Errorf("plugins: restore: %w", err)
	}
	return nil
}
