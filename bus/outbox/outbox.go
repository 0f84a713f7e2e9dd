// Package outbox makes emitting an event durable before it is published.
//
// DESIGN.md "Durability": JetStream alone can lose acknowledged writes under
// power loss, so a node first writes every event it emits into its local
// Pebble outbox and syncs it; a publisher goroutine then signs and publishes
// what is pending, and deletes entries only once JetStream acknowledged them.
// After a crash everything unacknowledged is published again.
//
// Invariants:
//
//  1. Emit returns nil only after the drafts are synced to disk (pebble.Sync).
//     A failed sync is fatal: the outbox stops accepting events and reports
//     the error through Err; the node must stop. A full disk (ENOSPC) is
//     not: Pebble's commit pipeline stays failed after a failed write, so
//     the outbox closes its store, waits for free space, opens it again
//     (everything synced before is there) and retries the write; Emit
//     returns only once it is synced, and NoSpace says why it waits.
//  2. Entries are published in Emit order (FIFO per node).
//  3. A message is retried with the exact same bytes (same Nats-Msg-Id) while
//     the process lives, so JetStream's duplicate window drops repeats; after
//     a restart events are re-signed in new messages, and ledgers drop
//     repeated event ids (each event keeps its id).
//  4. Throughput comes from batching: each publish round takes everything
//     pending, packs events of one subject into one signed message, and
//     publishes asynchronously — never from weaker syncing of events. Only
//     the deletion of acknowledged entries waits for company: it is
//     written, synced, once the outbox has been idle for goneIdle, or
//     after goneLinger or maxGone entries, so a busy outbox does not sync
//     once per round for it, and an idle one leaves the disk to the
//     readers of what it just published (the ledgers' appends, an
//     executor's start record) rather than syncing beside them. Close
//     writes it at once. A crash before it is written publishes those
//     entries again, as after a crash between an acknowledgement and its
//     deletion (3).
package outbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors.
var (
	// ErrClosed is returned by Emit after Close or after a fatal error.
	ErrClosed = errors.New("outbox: closed")
	// ErrSync marks a failed fsync: the node must stop.
	ErrSync = errors.New("outbox: sync failed")
)

// Limits of one publish round.
const (
	maxRoundEvents = 4096
	maxMsgEvents   = 512
	maxMsgBytes    = envelope.MaxMessageBytes / 2
)

var prefix = []byte("o/")

// entry is one pending draft.
type entry struct {
	seq   uint64
	draft event.Draft
	// checked: accepted by this process's Emit (envelope.RedactCheckDraft), so
	// signing need not scan it for secrets again; entries read back from
	// disk at open are scanned when signed.
	checked bool
}

// stored is the on-disk form of a draft: its encoding/json encoding
// (appendStored).
type stored struct {
	ID     string          `json:"id"`
	Type   event.Type      `json:"type"`
	Run    string          `json:"run,omitempty"`
	Target string          `json:"target,omitempty"`
	Time   time.Time       `json:"time"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// Outbox is a durable queue of events waiting to be published.
type Outbox struct {
	// dbMu guards db: writers hold it shared, the reopening after a full
	// disk and Close hold it alone. db is nil while a reopening failed.
	dbMu sync.RWMutex
	db   *pebble.DB
	dir  string
	fs   vfs.FS
	id   atomic.Pointer[trust.Identity]
	log  *slog.Logger
	wake chan struct{}
	// now is the clock that signs rounds and ages them (tests move it).
	now func() time.Time
	// goneIdle is how long the publisher, idle, waits before it writes
	// the deletion of acknowledged entries (invariant 4).
	goneIdle time.Duration
	mu       struct {
		sync.Mutex
		next    uint64
		pending []entry
		fatal   error
		closed  bool
		// noSpace is the full-disk error the outbox waits out (nil: none).
		noSpace error
		// drained is closed and replaced whenever pending becomes empty.
		drained chan struct{}
	}
	// Published counts events acknowledged by JetStream.
	published uint64

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Open opens (or creates) the outbox in dir, loading what is pending.
func Open(dir string, id *trust.Identity, logger *slog.Logger) (*Outbox, error) {
	return open(dir, nil, id, logger)
}

// open is Open on a given file system (tests inject disk failures).

// SetIdentity makes id sign what the outbox publishes from now on: a
// renewed credential of the same node (node.SetIdentity). Events already
// signed keep their signature.
func (o *Outbox) SetIdentity(id *trust.Identity) { o.id.Store(id) }

func open(dir string, fs vfs.FS, id *trust.Identity, logger *slog.Logger) (*Outbox, error) {
	if logger == nil {
		logger = slog.Default()
	}
	db, err := openDB(dir, fs, logger)
	if err != nil {
		return nil, err
	}
	o := &Outbox{db: db, dir: dir, fs: fs, log: logger, wake: make(chan struct{}, 1), now: time.Now, goneIdle: goneIdle}
	o.id.Store(id)
	o.mu.drained = make(chan struct{})
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: []byte("o0")})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("outbox: scan: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		seq := binary.BigEndian.Uint64(it.Key()[len(prefix):])
		var s stored
		if err := json.Unmarshal(it.Value(), &s); err != nil {
			it.Close()
			db.Close()
			return nil, fmt.Errorf("outbox: entry %d: %w", seq, err)
		}
		o.mu.pending = append(o.mu.pending, entry{seq: seq, draft: event.Draft(s)})
		o.mu.next = seq
	}
	if err := it.Close(); err != nil {
		db.Close()
		return nil, fmt.Errorf("outbox: scan: %w", err)
	}
	if len(o.mu.pending) == 0 {
		close(o.mu.drained)
	} else {
		logger.Info("outbox has unpublished events", "count", len(o.mu.pending))
	}
	return o, nil
}

func openDB(dir string, fs vfs.FS, logger *slog.Logger) (*pebble.DB, error) {
	opts, release := pebblelog.SmallStoreOptions(logger, fs)
	db, err := pebble.Open(dir, opts)
	release()
	if err != nil {
		return nil, fmt.Errorf("outbox: open %s: %w", dir, err)
	}
	return db, nil
}

func key(seq uint64) []byte {
	k := make([]byte, len(prefix)+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], seq)
	return k
}

// Emit durably queues drafts. It implements roles.Emitter.
func (o *Outbox) Emit(ctx context.Context, drafts ...event.Draft) error {
	if len(drafts) == 0 {
		return nil
	}
	drafts = append([]event.Draft(nil), drafts...) // the caller's stay as they were
	for i, d := range drafts {
		// Secrets are redacted when an event is created; what redaction
		// leaves is refused.
		d, err := envelope.RedactCheckDraft(d)
		if err != nil {
			return err
		}
		drafts[i] = d
		if d.ID == "" || d.Type == "" {
			return fmt.Errorf("outbox: draft needs an id and a type")
		}
	}
	o.mu.Lock()
	if o.mu.closed || o.mu.fatal != nil {
		o.mu.Unlock()
		return ErrClosed
	}
	// Sequence numbers are reserved under the lock so that pending stays in
	// key order; the sync happens outside it (group commit).
	first := o.mu.next + 1
	o.mu.next += uint64(len(drafts))
	o.mu.Unlock()
	// Every entry is encoded into one buffer: ends[i] is where entry i
	// ends.
	size := 0
	for i := range drafts {
		size += storedSize(&drafts[i])
	}
	buf := make([]byte, 0, size)
	ends := make([]int, len(drafts))
	for i := range drafts {
		var err error
		if buf, err = appendStored(buf, &drafts[i]); err != nil {
			return err
		}
		ends[i] = len(buf)
	}
	err := o.commit(ctx, func(b *pebble.Batch) error {
		k := make([]byte, len(prefix)+8)
		copy(k, prefix)
		start := 0
		for i, end := range ends {
			binary.BigEndian.PutUint64(k[len(prefix):], first+uint64(i))
			if err := b.Set(k, buf[start:end], nil); err != nil {
				return fmt.Errorf("outbox: batch: %w", err)
			}
			start = end
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.mu.Lock()
	if len(o.mu.pending) == 0 {
		o.mu.drained = make(chan struct{})
	}
	o.mu.pending = insertSorted(o.mu.pending, first, drafts)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// insertSorted appends entries for drafts starting at seq first, keeping
// pending ordered by seq (concurrent Emits may commit out of order).
func insertSorted(pending []entry, first uint64, drafts []event.Draft) []entry {
	at := len(pending)
	for at > 0 && pending[at-1].seq > first {
		at--
	}
	add := make([]entry, len(drafts))
	for i, d := range drafts {
		add[i] = entry{seq: first + uint64(i), draft: d, checked: true}
	}
	if at == len(pending) {
		return append(pending, add...)
	}
	return append(pending[:at], append(add, pending[at:]...)...)
}

func (o *Outbox) fail(err error) {
	o.mu.Lock()
	if o.mu.fatal == nil {
		o.mu.fatal = err
		o.log.Error("outbox failed: stopping", "err", err)
		if len(o.mu.pending) > 0 {
			// Wake WaitDrained: it reports the fatal error.
			close(o.mu.drained)
			o.mu.drained = make(chan struct{})
		}
	}
	o.mu.Unlock()
}

// commit writes what fill puts in a batch and syncs it. A failed sync is
// fatal (ErrSync, through fail); a full disk is waited out: the store is
// reopened once space returns and the batch written again (its keys and
// values are the same, so a write that did reach the disk before the
// failure is only repeated). It gives up when ctx ends or the outbox
// closes.
func (o *Outbox) commit(ctx context.Context, fill func(*pebble.Batch) error) error {
	for {
		o.dbMu.RLock()
		db := o.db
		var err error
		if db == nil {
			err = errReopen
		} else {
			b := db.NewBatch()
			if err = fill(b); err == nil {
				err = pebblelog.SyncCommit(b)
			}
			b.Close()
		}
		o.dbMu.RUnlock()
		switch {
		case err == nil:
			o.setNoSpace(nil)
			return nil
		case err != errReopen && !diskspace.IsNoSpace(err):
			err = fmt.Errorf("%w: %w", ErrSync, err)
			o.fail(err)
			return err
		case err != errReopen:
			o.setNoSpace(err)
		}
		if err := o.reopen(ctx, db); err != nil {
			return err
		}
	}
}

// errReopen marks a store closed by a reopening that has not succeeded yet.
var errReopen = errors.New("outbox: store closed for reopening")

// Reopening after a full disk: how long between attempts, and the free
// space wanted before one (opening writes a new WAL and manifest).
const (
	reopenEvery   = 250 * time.Millisecond
	reopenMinFree = 1 << 20
)

// reopen replaces failed, the store whose commit pipeline a full disk
// broke, with the same store opened again, once there is space for it. It
// returns at once if another writer has done it already.
func (o *Outbox) reopen(ctx context.Context, failed *pebble.DB) error {
	t := time.NewTicker(reopenEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("outbox: waiting for disk space: %w", ctx.Err())
		case <-t.C:
		}
		o.mu.Lock()
		closed, fatal := o.mu.closed, o.mu.fatal
		o.mu.Unlock()
		if closed || fatal != nil {
			return ErrClosed
		}
		if u, err := diskspace.Stat(o.dir); err == nil && u.Free < reopenMinFree {
			continue
		}
		o.dbMu.Lock()
		if o.db != failed && o.db != nil {
			o.dbMu.Unlock()
			return nil
		}
		if o.db != nil {
			// A store whose WAL write failed reports that error again on
			// Close; what was synced before is on disk.
			if err := o.db.Close(); err != nil {
				o.log.Debug("outbox: close the store broken by a full disk", "err", err)
			}
			o.db = nil
		}
		db, err := openDB(o.dir, o.fs, o.log)
		if err == nil {
			o.db = db
		}
		o.dbMu.Unlock()
		if err == nil {
			o.log.Info("outbox store reopened after a full disk; writing again")
			return nil
		}
		if !diskspace.IsNoSpace(err) {
			err = fmt.Errorf("%w: reopen after a full disk: %w", ErrSync, err)
			o.fail(err)
			return err
		}
		o.setNoSpace(err)
	}
}

// setNoSpace records the full disk the outbox waits out (nil: over).
func (o *Outbox) setNoSpace(err error) {
	o.mu.Lock()
	was := o.mu.noSpace
	o.mu.noSpace = err
	o.mu.Unlock()
	switch {
	case was == nil && err != nil:
		o.log.Error("outbox: disk full; emits wait until space returns (nothing is lost)", "err", err)
	case was != nil && err == nil:
		o.log.Info("outbox: disk space back; emitting again")
	}
}

// NoSpace returns the full-disk error the outbox is waiting out: Emit
// blocks, and nothing is published, until space returns. Nil otherwise.
func (o *Outbox) NoSpace() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.noSpace
}

// Err returns the fatal error that stopped the outbox, if any.
func (o *Outbox) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.fatal
}

// Pending returns how many events wait for an acknowledgement.
func (o *Outbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.mu.pending)
}

// WaitDrained waits until nothing is pending (or ctx ends).
func (o *Outbox) WaitDrained(ctx context.Context) error {
	for {
		o.mu.Lock()
		n, ch, fatal := len(o.mu.pending), o.mu.drained, o.mu.fatal
		o.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("outbox: %d events still unpublished: %w", n, ctx.Err())
		}
	}
}

// Start begins publishing to js. It returns at once.
func (o *Outbox) Start(js jetstream.JetStream) {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	if o.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel, o.done = cancel, make(chan struct{})
	go o.run(ctx, js)
}

// Stop ends the publisher (what is pending stays on disk for next time).
func (o *Outbox) Stop() {
	o.runMu.Lock()
	cancel, done := o.cancel, o.done
	o.cancel = nil
	o.runMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Close stops the publisher and closes the store.
func (o *Outbox) Close() error {
	o.Stop()
	o.mu.Lock()
	if o.mu.closed {
		o.mu.Unlock()
		return nil
	}
	o.mu.closed = true
	noSpace := o.mu.noSpace
	o.mu.Unlock()
	o.dbMu.Lock()
	defer o.dbMu.Unlock()
	if o.db == nil {
		return nil
	}
	err := o.db.Close()
	o.db = nil
	if err != nil && (noSpace == nil || !diskspace.IsNoSpace(err)) {
		return fmt.Errorf("outbox: close: %w", err)
	}
	return nil
}

// message is one signed message of a round, kept so retries send the same
// bytes.
type message struct {
	subject string
	raw     []byte
	jti     string
	last    uint64 // seq of the last entry it covers
}

// How long, and for how many entries, the deletion of acknowledged
// entries may wait to be written (invariant 4).
const (
	goneLinger = 50 * time.Millisecond
	maxGone    = maxRoundEvents
	// goneIdle is how long an idle outbox waits before it writes them:
	// the ledgers' appends of what it published and an executor's start
	// record follow the acknowledgement within a few milliseconds, and a
	// sync of its own then would share the disk with theirs.
	goneIdle = 20 * time.Millisecond
)

func (o *Outbox) run(ctx context.Context, js jetstream.JetStream) {
	defer close(o.done)
	// gone are the acknowledged entries whose deletion is not written
	// yet (since goneSince).
	var gone []uint64
	var goneSince time.Time
	flush := func(ctx context.Context) bool {
		if len(gone) == 0 {
			return true
		}
		if err := o.remove(ctx, gone); err != nil {
			if ctx.Err() == nil {
				o.fail(err)
			}
			return false
		}
		gone = nil
		return true
	}
	defer func() {
		// Stopping: write what was acknowledged, so that the next start
		// does not publish it again.
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		flush(fctx)
	}()
	// A round is retried with the same signed bytes (so JetStream's
	// duplicate window drops a copy that did land) until the signatures
	// near their expiry; then it is signed again, with the same event ids,
	// so that no ledger refuses it as expired after a long outage.
	var retry *round
	backoff := 50 * time.Millisecond
	// idleTimer ends the idle wait of the deletion (goneIdle).
	idleTimer := time.NewTimer(time.Hour)
	idleTimer.Stop()
	defer idleTimer.Stop()
	for {
		o.mu.Lock()
		n := len(o.mu.pending)
		var entries []entry
		if retry == nil && n > 0 {
			entries = append([]entry(nil), o.mu.pending[:min(n, maxRoundEvents)]...)
		}
		o.mu.Unlock()
		if len(gone) >= maxGone || (len(gone) > 0 && o.now().Sub(goneSince) >= goneLinger) || (n == 0 && o.goneIdle <= 0) {
			if !flush(ctx) {
				return
			}
		}
		if n == 0 {
			// Idle: the deletion waits goneIdle more, for a round to
			// join it or for the disk to be free of the readers of what
			// was just acknowledged.
			var idle <-chan time.Time
			if len(gone) > 0 {
				idleTimer.Reset(o.goneIdle)
				idle = idleTimer.C
			}
			select {
			case <-ctx.Done():
				return
			case <-o.wake:
				idleTimer.Stop()
				continue
			case <-idle:
				if !flush(ctx) {
					return
				}
				continue
			}
		}
		r := retry
		if r == nil || o.now().Sub(r.signed) > resignAfter {
			if r != nil {
				entries = r.entries
				o.log.Info("outbox re-signing a retried round before its signatures expire", "events", len(entries))
			}
			var err error
			if r, err = o.newRound(entries); err != nil {
				o.fail(fmt.Errorf("outbox: sign: %w", err))
				return
			}
		}
		if err := o.publish(ctx, js, r.msgs); err != nil {
			if ctx.Err() != nil {
				return
			}
			o.log.Warn("outbox publish failed; retrying", "err", err, "messages", len(r.msgs), "backoff", backoff)
			retry = r
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		retry, backoff = nil, 50*time.Millisecond
		seqs := r.seqs()
		o.acknowledged(seqs)
		if len(gone) == 0 {
			goneSince = o.now()
		}
		gone = append(gone, seqs...)
	}
}

// resignAfter bounds how long a retried round keeps its signatures: well
// inside envelope.TTL, so what finally lands is never expired.
const resignAfter = envelope.TTL / 2

// round is one publish round: the entries and their signed messages.
type round struct {
	entries []entry
	msgs    []message
	signed  time.Time
}

func (o *Outbox) newRound(entries []entry) (*round, error) {
	now := o.now()
	msgs, err := o.sign(entries, now)
	if err != nil {
		return nil, err
	}
	return &round{entries: entries, msgs: msgs, signed: now}, nil
}

func (r *round) seqs() []uint64 {
	out := make([]uint64, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.seq
	}
	return out
}

// sign packs a round into messages signed at now: consecutive drafts of one
// subject share a message, bounded by count and bytes. Splitting only at
// subject changes keeps FIFO order across messages.
func (o *Outbox) sign(round []entry, now time.Time) ([]message, error) {
	var msgs []message
	var group []event.Draft
	var size int
	checked := true // every draft of group was checked by Emit
	flush := func(last uint64) error {
		if len(group) == 0 {
			return nil
		}
		sign := envelope.SignChecked
		if !checked {
			sign = func(id *trust.Identity, ds []event.Draft, now time.Time) ([]byte, string, error) {
				return envelope.SignAt(id, ds, now, envelope.Version)
			}
		}
		raw, jti, err := sign(o.id.Load(), group, now)
		if err != nil {
			return err
		}
		msgs = append(msgs, message{subject: group[0].Subject(), raw: raw, jti: jti, last: last})
		group, size, checked = group[:0], 0, true
		return nil
	}
	for i, e := range round {
		d := e.draft
		if len(group) > 0 && (group[0].Subject() != d.Subject() || len(group) >= maxMsgEvents || size+len(d.Data) > maxMsgBytes) {
			if err := flush(round[i-1].seq); err != nil {
				return nil, err
			}
		}
		group = append(group, d)
		checked = checked && e.checked
		size += len(d.Data) + 128
	}
	if err := flush(round[len(round)-1].seq); err != nil {
		return nil, err
	}
	return msgs, nil
}

func (o *Outbox) publish(ctx context.Context, js jetstream.JetStream, msgs []message) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		f, err := js.PublishAsync(m.subject, m.raw, jetstream.WithMsgID(m.jti), jetstream.WithStallWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("publish %s: %w", m.subject, err)
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish %s (%s): %w", msgs[i].subject, msgs[i].jti, err)
		case <-timeout.C:
			return fmt.Errorf("publish %s (%s): no acknowledgement in 10s", msgs[i].subject, msgs[i].jti)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// remove deletes acknowledged entries on disk (synced).
func (o *Outbox) remove(ctx context.Context, seqs []uint64) error {
	err := o.commit(ctx, func(b *pebble.Batch) error {
		for _, seq := range seqs {
			if err := b.Delete(key(seq), nil); err != nil {
				return fmt.Errorf("outbox: batch: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox: delete acknowledged entries: %w", err)
	}
	return nil
}

// acknowledged takes acknowledged entries out of what is pending (their
// deletion on disk follows: remove).
func (o *Outbox) acknowledged(seqs []uint64) {
	done := make(map[uint64]bool, len(seqs))
	for _, seq := range seqs {
		done[seq] = true
	}
	o.mu.Lock()
	kept := o.mu.pending[:0]
	for _, e := range o.mu.pending {
		if !done[e.seq] {
			kept = append(kept, e)
		}
	}
	clear(o.mu.pending[len(kept):])
	o.mu.pending = kept
	o.published += uint64(len(seqs))
	if len(o.mu.pending) == 0 {
		close(o.mu.drained)
	}
	o.mu.Unlock()
}

// Published returns how many events JetStream has acknowledged since Open.
func (o *Outbox) Published() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.published
}
