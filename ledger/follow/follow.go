// Package follow folds the AGENTIC_EVENTS stream into a node's ledger and
// hands every committed event to the node's roles.
//
// A Follower first restores: it folds every record already in the ledger
// into the roles (Settled(false)). Then it reads the stream in order from the
// ledger's applied stream sequence with an ordered consumer, verifies each
// message once (envelope.Verifier, as of the message's stream timestamp, so
// every ledger reaches the same verdict), appends batches to the ledger in
// one synced commit — each message with the credential the verifier
// authenticated, which the ledger judges against the revocations it holds
// (ledger.Message.Signer) —, and folds the committed records into the
// roles. Roles
// are told they are live once the ledger has caught up with the stream head
// seen at start.
//
// Invariants:
//
//  1. Roles see events only after they are durable in the ledger, in ledger
//     order, from one goroutine.
//  2. A message that fails verification is never folded as an event: the
//     ledger records an event.Rejected with its code, the reason, subject
//     and claimed signer — all derived from the message, never from a
//     library's error text, so every ledger records the same.
//  3. Events of types this version does not know, accepted by the verifier
//     (their signer's roles may publish in the category), are recorded and
//     handed to the folds, which skip them.
//  4. A failed ledger commit stops the follower and calls OnFatal: the node
//     must stop rather than go on.
//  5. While Config.Space reports the data dir below its free-space floor,
//     nothing is appended: the follower waits (the stream keeps what it has
//     not read) and goes on by itself once space returns. A commit that
//     still meets a full disk (ENOSPC) leaves Pebble's commit pipeline
//     failed until the store is reopened, so it stops the node like any
//     failed commit, with a message that says so.
//
// The follower measures every signer's clock skew (Skews) from the
// messages it verifies.
//
// A flood of refused messages does not grow the ledger without bound: the
// ledger records rejections one by one up to a rate and counts the rest in
// event.rejected_summary records (ledger.RejectWindow). The rate is judged by
// stream time and stream sequence, never by a clock or by arrival, so every
// ledger node writes the same records and a replay reproduces them. Only the
// REJECT_FLOOD alarm (Checks) is timed by the node's clock: it is the node's
// own report, not a ledger record.
package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/diskspace"
	"github.com/agentic-dev/agentic/internal/fold"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrStreamBehind is returned by Start when the stream holds fewer messages
// than the ledger has folded.
var ErrStreamBehind = errors.New("follow: stream behind ledger")

// followBufferBytes bounds the stream messages a follower buffers.
const followBufferBytes = 8 << 20

// followHeartbeat is the idle heartbeat the follower asks of the server.
const followHeartbeat = 2 * time.Second

// maxBatch bounds the messages folded in one ledger commit, and
// maxBatchEvents and maxBatchBytes the events and raw bytes: a commit of
// batched messages (hundreds of events each) must not grow into a
// hundred-megabyte Pebble batch, which Pebble keeps in memory until it is
// flushed, and which would hold every role's fold back until it commits.
const (
	maxBatch       = 512
	maxBatchEvents = 4096
	maxBatchBytes  = 4 << 20
)

// DefaultSnapshotEvery is how many ledger records pass between snapshots of
// the folders that support them.
const DefaultSnapshotEvery = 10_000

// Config wires a follower.
type Config struct {
	JS       jetstream.JetStream
	Store    *ledger.Store
	Verifier *envelope.Verifier
	Folders  []fold.Folder
	Logger   *slog.Logger
	// OnFatal is called once if the ledger cannot commit.
	OnFatal func(error)
	// SnapshotEvery is how many records pass between snapshots of folders
	// that implement fold.Snapshotter (DefaultSnapshotEvery if 0).
	SnapshotEvery uint64
	// Space, if set, is asked before every commit whether the data dir is
	// above its free-space floor (internal/diskspace.Monitor).
	Space Space
	// Now is the node's clock (time.Now if nil). It times only the
	// REJECT_FLOOD alarm (Checks), never what the ledger records.
	Now func() time.Time
}

// Space is the free-space guard of the ledger's writes.
type Space interface {
	// Refresh reads the free space now: nil when writes may go on, else
	// why not.
	Refresh() error
	// Wait waits until writes may go on, or ctx ends.
	Wait(ctx context.Context) error
}

// Follower keeps a ledger in step with the stream.
type Follower struct {
	cfg Config
	log *slog.Logger

	mu struct {
		sync.Mutex
		live    bool
		changed chan struct{}
		liveCh  chan struct{}
		gaps    uint64
		reject  uint64
		repub   uint64
		unknown map[event.Type]bool // unknown types met, logged once each
		paused  error               // why appends wait (disk below its floor)
	}
	logged   rejectLog // rejections logged at Warn, by window (fold goroutine)
	skew     *skewTracker
	lastSnap uint64
	// head is the ledger's head as the last Append left it (the fold
	// goroutine's; the follower is the store's only appender).
	head uint64
	// writing holds a token while snapshots are written in the background;
	// wg waits for that writer.
	writing chan struct{}
	wg      sync.WaitGroup
	failed  atomic.Bool // a commit failed: save nothing more
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns a follower; it starts nothing.
func New(cfg Config) *Follower {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &Follower{cfg: cfg, log: cfg.Logger, writing: make(chan struct{}, 1), skew: newSkewTracker(envelope.Leeway, cfg.Logger)}
	f.mu.changed = make(chan struct{})
	f.mu.liveCh = make(chan struct{})
	return f
}

// Start restores the roles from the ledger, then follows the stream in the
// background. It returns once the restore is done.
func (f *Follower) Start(ctx context.Context) error {
	if f.cancel != nil {
		return nil
	}
	// The ledger judges credentials by the roots it trusts: the genesis
	// (the verifier's root.pub) and those its trust records added.
	f.cfg.Store.SetGenesis(f.cfg.Verifier.Genesis().Public)
	f.cfg.Verifier.UseLedgerRoots(f.cfg.Store)
	n, err := f.restore()
	if err != nil {
		return err
	}
	f.head, _ = f.cfg.Store.Head()
	f.settle(false)
	info, err := f.cfg.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		return fmt.Errorf("follow: stream %s: %w", bus.EventsStream, err)
	}
	st, err := info.Info(ctx)
	if err != nil {
		return fmt.Errorf("follow: stream info: %w", err)
	}
	target := st.State.LastSeq
	applied := f.cfg.Store.AppliedStreamSeq()
	if target < applied {
		// The stream is younger than the ledger: it was deleted and made
		// again (or the JetStream store was wiped). Its sequence numbers
		// restarted, and folding would skip every new message as already
		// applied. Refuse rather than stall silently.
		// The ledger holds every event it folded: the remedy keeps it.
		return fmt.Errorf("follow: stream %s ends at sequence %d but this ledger has folded up to %d: the stream was recreated from 1 or its store lost. Keep this ledger, it holds every event it folded (do not move it aside or rebuild it from this stream). If the stream holds nothing to keep, delete it (nats stream rm %s) and start this node again: a ledger node recreates it continuing at %d; otherwise restore the stream from a backup (%w)",
			bus.EventsStream, target, applied, bus.EventsStream, applied+1, ErrStreamBehind)
	}
	f.log.Info("ledger restored", "records", n, "applied_stream_seq", applied, "stream_last_seq", target)
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{event.SubjectAll}}
	if applied > 0 {
		occ.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		occ.OptStartSeq = applied + 1
	}
	cons, err := f.cfg.JS.OrderedConsumer(ctx, bus.EventsStream, occ)
	if err != nil {
		return fmt.Errorf("follow: consumer: %w", err)
	}
	// Bounded by bytes, not count: batches carry up to ~1 MiB each, and
	// a thousand of them in flight would overrun the connection's pending
	// limits (the server cuts a slow consumer off) and starve every other
	// request on the same connection while a long tail is caught up.
	//
	// The heartbeat is shorter than the ordered consumer's default (5 s,
	// a reset after two missed): a consumer the server lost (JetStream
	// restarted after a full disk, see embedded.Server) is made again within
	// seconds.
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(256, followBufferBytes), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return fmt.Errorf("follow: consume: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	if applied >= target {
		f.setLive()
	}
	go f.run(runCtx, it, target)
	return nil
}

// Stop ends following, waits for the goroutines, and saves the folders'
// snapshots at the last folded record (unless nothing moved since the last
// ones), so that a clean restart folds nothing again.
func (f *Follower) Stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
	f.cancel = nil
	f.wg.Wait()
	if head, _ := f.cfg.Store.Head(); head > f.lastSnap && !f.failed.Load() && !f.lowSpace() {
		f.lastSnap = head
		f.save(f.take())
	}
}

// Live reports whether the ledger has caught up with the stream head seen at
// start.
func (f *Follower) Live() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.live
}

// WaitLive waits until the follower is live.
func (f *Follower) WaitLive(ctx context.Context) error {
	f.mu.Lock()
	ch := f.mu.liveCh
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("follow: not caught up with the stream: %w", ctx.Err())
	}
}

// Changed returns a channel closed at the next commit (for long polls).
func (f *Follower) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.changed
}

func (f *Follower) setLive() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mu.live {
		f.mu.live = true
		close(f.mu.liveCh)
	}
}

// restore loads the folders' snapshots and folds the records after them.
func (f *Follower) restore() (int, error) {
	from := make([]uint64, len(f.cfg.Folders))
	start := ^uint64(0)
	for i, fo := range f.cfg.Folders {
		from[i] = 1
		if sn, ok := fo.(fold.Snapshotter); ok {
			seq, data, err := f.cfg.Store.LoadSnapshot(sn.SnapshotName())
			switch {
			case errors.Is(err, ledger.ErrNotFound):
			case errors.Is(err, ledger.ErrCorrupt):
				f.log.Warn("snapshot damaged; folding from the start", "snapshot", sn.SnapshotName(), "err", err)
			case err != nil:
				return 0, fmt.Errorf("follow: load snapshot %s: %w", sn.SnapshotName(), err)
			default:
				if err := sn.Restore(data); err != nil {
					f.log.Warn("snapshot unusable; folding from the start", "snapshot", sn.SnapshotName(), "err", err)
				} else {
					from[i] = seq + 1
				}
			}
		}
		start = min(start, from[i])
	}
	if len(f.cfg.Folders) == 0 {
		f.lastSnap, _ = f.cfg.Store.Head()
		return 0, nil
	}
	n := 0
	for rec, err := range f.cfg.Store.Scan(start) {
		if err != nil {
			return n, fmt.Errorf("follow: restore: %w", err)
		}
		for i, fo := range f.cfg.Folders {
			if rec.Event.Seq >= from[i] {
				fo.Fold(rec.Event)
			}
		}
		n++
	}
	// The oldest state restored: the next snapshot (periodic, or at Stop)
	// saves the refold just done.
	f.lastSnap = start - 1
	return n, nil
}

// snapshot takes the state of every snapshotting folder when enough
// records have passed since the last time, and writes it in the background
// (one write at a time; a write still going skips this round).
func (f *Follower) snapshot() {
	head := f.head
	if head-f.lastSnap < f.cfg.SnapshotEvery || f.lowSpace() {
		return
	}
	select {
	case f.writing <- struct{}{}:
	default:
		return // the previous snapshots are still being written
	}
	f.lastSnap = head
	snaps := f.take()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.writing }()
		f.save(snaps)
	}()
}

// taken is one folder's state, taken on the fold goroutine.
type taken struct {
	name string
	seq  uint64
	data []byte
}

// take snapshots every snapshotting folder (on the goroutine that folds).
func (f *Follower) take() []taken {
	var out []taken
	for _, fo := range f.cfg.Folders {
		sn, ok := fo.(fold.Snapshotter)
		if !ok {
			continue
		}
		seq, data, err := sn.Snapshot()
		if err != nil {
			f.log.Warn("snapshot failed", "snapshot", sn.SnapshotName(), "err", err)
			continue
		}
		out = append(out, taken{name: sn.SnapshotName(), seq: seq, data: data})
	}
	return out
}

// save writes snapshots to the ledger; each write is atomic.
func (f *Follower) save(snaps []taken) {
	for _, s := range snaps {
		if err := f.cfg.Store.SaveSnapshot(s.name, s.seq, s.data); err != nil {
			f.log.Warn("snapshot failed", "snapshot", s.name, "err", err)
		}
	}
}

// Stats are the follower's counters since start: gap records, refused
// messages (forgeries, replays, bad signatures…), and republications (an
// event's own signer sent it again after a restart: harmless duplicates,
// counted apart so that Rejected stays an alarm).
type Stats struct {
	Gaps        uint64
	Rejected    uint64
	Republished uint64
}

// Stats returns the counters.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Gaps: f.mu.gaps, Rejected: f.mu.reject, Republished: f.mu.repub}
}

func (f *Follower) count(ev event.Event) {
	switch ev.Type {
	case event.Gap:
		f.mu.Lock()
		f.mu.gaps++
		f.mu.Unlock()
	case event.Rejected:
		var d event.RejectedData
		_ = json.Unmarshal(ev.Data, &d)
		f.mu.Lock()
		if d.Code == event.RejectRepublished {
			f.mu.repub++
		} else {
			f.mu.reject++
		}
		f.mu.Unlock()
	case event.RejectedSummary:
		var d event.RejectedSummaryData
		_ = json.Unmarshal(ev.Data, &d)
		f.mu.Lock()
		f.mu.repub += d.ByCode[event.RejectRepublished]
		f.mu.reject += d.Count - d.ByCode[event.RejectRepublished]
		f.mu.Unlock()
	}
}

func (f *Follower) fold(ev event.Event) {
	for _, r := range f.cfg.Folders {
		r.Fold(ev)
	}
}

func (f *Follower) settle(live bool) {
	for _, r := range f.cfg.Folders {
		r.Settled(live)
	}
}

func (f *Follower) run(ctx context.Context, it jetstream.MessagesContext, target uint64) {
	defer close(f.done)
	if f.Live() {
		// Caught up at start (nothing new on the stream): tell the roles
		// now, not at the next commit, which may be long in coming.
		f.settle(true)
	}
	msgs := make(chan jetstream.Msg, maxBatch)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(msgs)
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
					return
				}
				f.log.Warn("stream read failed; retrying", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer wg.Wait()
	defer it.Stop()
	batch := make([]ledger.Message, 0, maxBatch)
	for {
		var m jetstream.Msg
		var ok bool
		select {
		case <-ctx.Done():
			return
		case m, ok = <-msgs:
			if !ok {
				return
			}
		}
		batch = batch[:0]
		events, size := 0, 0
		// cut ends the batch after a trust.root_added: the next message
		// is verified once the ledger committed it, so that a credential
		// of the root it adds verifies from the next message on, on
		// every node whatever its batches.
		cut := false
		add := func(m jetstream.Msg) {
			if lm, ok := f.verify(m); ok {
				batch = append(batch, lm)
				events += max(1, len(lm.Events))
				size += len(lm.Raw)
				cut = cut || (len(lm.Events) > 0 && lm.Events[0].Type == event.RootAdded)
			}
		}
		add(m)
	drain:
		for !cut && len(batch) < maxBatch && events < maxBatchEvents && size < maxBatchBytes {
			select {
			case m, ok = <-msgs:
				if !ok {
					break drain
				}
				add(m)
			default:
				break drain
			}
		}
		if len(batch) == 0 {
			continue
		}
		if !f.waitSpace(ctx) {
			return
		}
		recs, err := f.cfg.Store.Append(batch)
		if err != nil {
			f.failed.Store(true)
			if diskspace.IsNoSpace(err) {
				err = fmt.Errorf("follow: the disk filled up under the ledger (Pebble cannot write again until the store is reopened): free space and start the node again, it starts read-only while the data dir is below its floor: %w", err)
			}
			f.log.Error("ledger commit failed: stopping", "err", err)
			if f.cfg.OnFatal != nil {
				f.cfg.OnFatal(err)
			}
			return
		}
		for _, ev := range recs {
			f.count(ev)
			f.fold(ev)
		}
		if len(recs) > 0 {
			f.head = recs[len(recs)-1].Seq
		}
		f.snapshot()
		caughtUp := false
		if f.cfg.Store.AppliedStreamSeq() >= target && !f.Live() {
			f.setLive()
			caughtUp = true
		}
		f.settle(f.Live())
		// Let the folded messages go: the batch's array would otherwise
		// keep the last commit's payloads and events (up to maxBatchBytes
		// and more) for as long as the node idles.
		clear(batch)
		f.mu.Lock()
		close(f.mu.changed)
		f.mu.changed = make(chan struct{})
		f.mu.Unlock()
		if caughtUp {
			f.releaseCatchUp()
		}
	}
}

// releaseCatchUp lets the ledger's store drop the memory of the catch-up's
// commits (large batches, flushed memtables; see ledger.Store.ReleaseMemory)
// once the follower has caught up: an idle node would keep it otherwise.
// Skipped while the data dir is below its free-space floor.
func (f *Follower) releaseCatchUp() {
	if f.lowSpace() {
		return
	}
	if err := f.cfg.Store.ReleaseMemory(); err != nil {
		f.log.Warn("ledger: release the catch-up's memory", "err", err)
	}
}

// waitSpace holds the next commit while the data dir is below its floor;
// false when ctx ended meanwhile.
func (f *Follower) waitSpace(ctx context.Context) bool {
	if f.cfg.Space == nil {
		return true
	}
	err := f.cfg.Space.Refresh()
	if err == nil {
		return true
	}
	f.log.Warn("ledger appends paused: the data dir is below its free-space floor", "err", err)
	f.mu.Lock()
	f.mu.paused = err
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.mu.paused = nil
		f.mu.Unlock()
	}()
	if f.cfg.Space.Wait(ctx) != nil {
		return false
	}
	f.log.Info("ledger appends resumed: disk space is back")
	return true
}

// lowSpace reports the data dir below its floor: snapshots are skipped
// then (they are an optimisation, and a Pebble write that meets a full
// disk outside a commit the store guards would end the process).
func (f *Follower) lowSpace() bool {
	return f.cfg.Space != nil && f.cfg.Space.Refresh() != nil
}

// Paused returns why the follower is not appending (the data dir below its
// free-space floor), or nil.
func (f *Follower) Paused() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.paused
}

// verify turns a stream message into a ledger message: verified events, or
// a rejection with the reason.
func (f *Follower) verify(m jetstream.Msg) (ledger.Message, bool) {
	md, err := m.Metadata()
	if err != nil {
		// Ordered consumers always deliver JetStream metadata; a message
		// without it cannot be placed in the ledger.
		f.log.Error("message without metadata skipped", "subject", m.Subject(), "err", err)
		return ledger.Message{}, false
	}
	lm := ledger.Message{StreamSeq: md.Sequence.Stream, Subject: m.Subject(), Time: md.Timestamp.UTC(), Raw: m.Data()}
	env, err := f.cfg.Verifier.Verify(m.Data(), m.Subject(), md.Timestamp)
	if err != nil {
		// The record holds the code and the deterministic reason; the
		// underlying detail (a decoder's text) goes to the log only.
		rej := envelope.AsRejection(err)
		rec := rej.Record(m.Subject())
		lm.EnvelopeID, lm.Reject = rej.Claimed.ID, &rec
		f.skew.observe(rej.Signer, rej.IssuedAt, md.Timestamp)
		level := f.logged.level(md.Timestamp, f.log)
		f.log.Log(context.Background(), level, "event rejected", "stream_seq", lm.StreamSeq, "subject", m.Subject(), "signer", rec.Signer, "code", rej.Code, "reason", rej.Reason, "detail", rej.Cause, "version", rej.Version)
		return lm, true
	}
	f.skew.observe(env.Signer.ID, env.IssuedAt, md.Timestamp)
	if !env.Known {
		f.unknownType(env)
	}
	lm.EnvelopeID = env.ID
	lm.Events = env.Events
	lm.Signer = env.Signer
	return lm, true
}

// unknownType logs, once per type, that events of a type this version does
// not know are kept in the ledger and skipped by the folds (a newer node's
// events during a rolling upgrade).
func (f *Follower) unknownType(env *envelope.Envelope) {
	f.mu.Lock()
	seen := f.mu.unknown[env.Type]
	if !seen {
		if f.mu.unknown == nil {
			f.mu.unknown = map[event.Type]bool{}
		}
		f.mu.unknown[env.Type] = true
	}
	f.mu.Unlock()
	if !seen {
		f.log.Info("events of a type this version does not know are kept in the ledger and skipped", "type", env.Type, "signer", env.Signer.ID, "protocol_version", env.Version, "known_version", envelope.Version)
	}
}

// Skews returns each signer's clock skew as measured from the messages
// folded since start: its iat against the stream timestamp, positive when
// its clock is ahead. A signer past half of envelope.Leeway is logged as a
// warning; past the leeway, as an error.
func (f *Follower) Skews() map[string]time.Duration { return f.skew.skews() }
