package settings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Method is the query API method that answers the settings in force
// (request: none; answer: InForce).
const Method = "cluster.settings"

// DefaultCheckEvery is how often a live node compares the streams with the
// settings in force when nothing else asks it to: the backstop of the
// JetStream advisories (WatchStreams), which a node that was disconnected
// misses.
const DefaultCheckEvery = 10 * time.Second

// Config wires a Cluster.
type Config struct {
	// Node is this node's name; answers carry it.
	Node string
	// NC serves the query API (Method); nil: no query API.
	NC *nats.Conn
	// Sign, when set, is the identity the query API's answers are signed
	// with (node/api, "Signed answers").
	Sign func() *trust.Identity
	// JS reaches the streams.
	JS     jetstream.JetStream
	Logger *slog.Logger
	// CheckEvery is how often the streams are compared while live
	// (DefaultCheckEvery if 0).
	CheckEvery time.Duration
	// Replicas is the replica count of the defaults, in force while the
	// ledger records no settings: bus.DefaultReplicas of the node's
	// connection (3 on a NATS cluster); 0 means 1.
	Replicas int
	// AppliedSeq returns the AGENTIC_EVENTS sequence the node's ledger has
	// folded up to (ledger.Store.AppliedStreamSeq): a deleted events
	// stream restored under the restore rule continues after it. Nil: 0.
	AppliedSeq func() uint64
}

// InForce is the answer to Method: the settings in force, where they come
// from, and what the answering node found when it last compared the
// streams with them.
type InForce struct {
	// ClusterSettingsData is the settings (revision and streams) as a
	// cluster.settings event carries them.
	event.ClusterSettingsData
	// Recorded is false while the ledger holds no cluster.settings event:
	// the settings are the defaults (revision 0).
	Recorded bool `json:"recorded"`
	// Event, Seq, Time and By identify the cluster.settings event in
	// force: its id, ledger position, signing time and signer.
	Event string    `json:"event,omitempty"`
	Seq   uint64    `json:"seq,omitempty"`
	Time  time.Time `json:"time,omitzero"`
	By    string    `json:"by,omitempty"`
	// Node is the node that answered.
	Node string `json:"node"`
	// Checked is when Node last compared the streams with the settings
	// (zero: not yet, the node is not live), and CheckedRevision the
	// revision it compared them with.
	Checked         time.Time `json:"checked,omitzero"`
	CheckedRevision uint64    `json:"checked_revision"`
	// Drift is every difference found then (empty: none).
	Drift []Drift `json:"drift"`
	// Sized lists the streams made with a smaller byte limit than the
	// settings ask because the JetStream store could not reserve it
	// (bus.SizedToStoreKey): not drift, but not what the settings say
	// either. Empty when none.
	Sized []Sized `json:"sized,omitempty"`
}

// Sized is a stream whose byte limit was lowered to fit its store: Asked
// is what the settings asked, Created what the stream has.
type Sized struct {
	Stream  string `json:"stream"`
	Asked   int64  `json:"asked_bytes"`
	Created int64  `json:"created_bytes"`
}

// record is the cluster.settings event in force.
type record struct {
	settings Settings
	event    string
	seq      uint64
	time     time.Time
	by       string
}

// Cluster keeps the cluster settings of one ledger node. It folds
// cluster.settings events into the settings in force (roles.Folder,
// restored from snapshots: roles.Snapshotter); once the node is live it
// compares the streams with them and reports the drift (see the package
// doc; an administrator applies settings: Apply); and it answers Method
// on the query API. It is a
// roles.Role for its lifecycle: New starts nothing; Start and Stop are
// idempotent.
type Cluster struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	// folded is the ledger position of the last event folded; only the
	// goroutine that calls Fold, Snapshot and Restore touches it.
	folded uint64

	mu struct {
		sync.Mutex
		rec        record
		live       bool
		dirty      bool // settings changed, or never checked
		checked    time.Time
		checkedRev uint64
		drift      map[string][]Drift
		// sized is, per stream, its byte limit lowered to fit the store
		// (InForce.Sized), as the last comparison found it.
		sized   map[string]Sized  // by stream, as of the last comparison
		logged  map[Drift]bool    // drift already logged
		warned  map[string]bool   // one-time warnings already given
		lastSeq map[string]uint64 // each stream's last sequence when last seen
	}
	// checking serializes Check: the loop and a caller may both run it.
	checking sync.Mutex
	// missing and drifted are the results of the streams' checks
	// (Checks): a stream absent, a stream that differs from the settings.
	missing, drifted health.State

	life struct {
		sync.Mutex
		cancel context.CancelFunc
		srv    *api.Server
		watch  func() // stops the advisory watch
	}
	wg sync.WaitGroup
}

var (
	_ roles.Role        = (*Cluster)(nil)
	_ roles.Snapshotter = (*Cluster)(nil)
)

// New returns a Cluster with the default settings in force; it starts
// nothing.
func New(cfg Config) *Cluster {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
	c.mu.rec = record{settings: DefaultWith(cfg.Replicas)}
	c.mu.dirty = true
	c.mu.drift = map[string][]Drift{}
	c.mu.sized = map[string]Sized{}
	c.mu.logged = map[Drift]bool{}
	c.mu.warned = map[string]bool{}
	c.mu.lastSeq = map[string]uint64{}
	return c
}

// Name is "settings".
func (c *Cluster) Name() string { return "settings" }

// Settings returns the settings in force.
func (c *Cluster) Settings() Settings {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.rec.settings
}

// Fold takes a committed cluster.settings event into the settings in force
// when it is valid and newer than them; it ignores, with an error in the
// log, one that is not.
func (c *Cluster) Fold(ev event.Event) {
	c.folded = ev.Seq
	if ev.Type != event.ClusterSettings {
		return
	}
	var d event.ClusterSettingsData
	err := ev.Decode(&d)
	var s Settings
	if err == nil {
		s, err = FromData(d)
	}
	if err != nil {
		c.log.Error("cluster settings event ignored: invalid", "event", ev.ID, "seq", ev.Seq, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.mu.rec.settings.Revision; s.Revision <= cur {
		c.log.Error("cluster settings event ignored: its revision is not above the one in force (two changes made at once?)",
			"event", ev.ID, "seq", ev.Seq, "revision", s.Revision, "in_force", cur)
		return
	}
	c.mu.rec = record{settings: s, event: ev.ID, seq: ev.Seq, time: ev.Time, by: ev.Node}
	c.mu.dirty = true
}

// Settled wakes the loop when the node is live and the streams have not
// been compared with the settings in force yet.
func (c *Cluster) Settled(live bool) {
	c.mu.Lock()
	c.mu.live = live
	wake := live && c.mu.dirty
	c.mu.Unlock()
	if wake {
		c.poke()
	}
}

func (c *Cluster) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// InForce returns the answer to Method.
func (c *Cluster) InForce() InForce {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.mu.rec
	out := InForce{
		ClusterSettingsData: r.settings.Data(),
		Recorded:            r.event != "",
		Event:               r.event, Seq: r.seq, Time: r.time, By: r.by,
		Node:    c.cfg.Node,
		Checked: c.mu.checked, CheckedRevision: c.mu.checkedRev,
		Drift: []Drift{},
	}
	for _, name := range slices.Sorted(maps.Keys(c.mu.drift)) {
		out.Drift = append(out.Drift, c.mu.drift[name]...)
	}
	for _, name := range slices.Sorted(maps.Keys(c.mu.sized)) {
		out.Sized = append(out.Sized, c.mu.sized[name])
	}
	return out
}

// Drift returns, for every stream compared so far, the differences found
// at the last comparison (an empty slice for a stream without drift).
func (c *Cluster) Drift() map[string][]Drift {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]Drift, len(c.mu.drift))
	for k, v := range c.mu.drift {
		out[k] = slices.Clone(v)
	}
	return out
}

// Start serves the query API and begins the loop that compares the
// streams with the settings. ctx is used for its values only.
func (c *Cluster) Start(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.cancel != nil {
		return nil
	}
	if c.cfg.NC != nil {
		srv := api.NewServer(c.cfg.NC, c.cfg.Node, c.log)
		if c.cfg.Sign != nil {
			srv.Sign(c.cfg.Sign)
		}
		api.HandleTyped(srv, Method, func(context.Context, struct{}) (InForce, error) { return c.InForce(), nil })
		if err := srv.Start(); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		c.life.srv = srv
	}
	if c.cfg.JS != nil {
		stop, err := bus.WatchStreams(c.cfg.JS.Conn(), watched, func(action, stream string) {
			c.log.Debug("stream advisory", "action", action, "stream", stream)
			c.poke()
		})
		if err != nil {
			if c.life.srv != nil {
				c.life.srv.Stop()
				c.life.srv = nil
			}
			return fmt.Errorf("settings: %w", err)
		}
		c.life.watch = stop
	}
	ctx, c.life.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.loop(ctx)
	}()
	return nil
}

// Stop ends the loop and the query API and waits for them.
func (c *Cluster) Stop(context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.cancel == nil {
		return nil
	}
	c.life.cancel()
	c.life.cancel = nil
	if c.life.watch != nil {
		c.life.watch()
		c.life.watch = nil
	}
	c.wg.Wait()
	if c.life.srv != nil {
		c.life.srv.Stop()
		c.life.srv = nil
	}
	return nil
}

// recheckFirst is how soon a comparison that found a stream missing, or
// could not compare, is made again; it doubles up to CheckEvery. JetStream
// announces a stream created before the stream answers lookups, so the
// comparison an advisory starts may come too early.
const recheckFirst = 250 * time.Millisecond

func (c *Cluster) loop(ctx context.Context) {
	t := time.NewTicker(c.cfg.CheckEvery)
	defer t.Stop()
	var again <-chan time.Time
	wait := recheckFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-t.C:
		case <-again:
		}
		again = nil
		c.mu.Lock()
		live := c.mu.live
		c.mu.Unlock()
		if !live {
			continue
		}
		c.Check(ctx)
		if c.unsettled() {
			again = time.After(wait)
			wait = min(wait*2, c.cfg.CheckEvery)
		} else {
			wait = recheckFirst
		}
	}
}

// unsettled reports whether the last comparison found a stream missing or
// could not be made.
func (c *Cluster) unsettled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.dirty {
		return true
	}
	for _, drift := range c.mu.drift {
		if missing(drift) {
			return true
		}
	}
	return false
}

// Check compares the streams and the leader bucket (its TTL, the lease
// TTL) with the settings in force. A difference is drift: logged at
// error level once, kept for the metric and the query API, and raised as
// the STREAM_DRIFT alarm (Checks); a stream whose recorded settings
// revision is older than the one in force is drift on FieldRevision too
// (the settings are not applied to it yet: an administrator applies them,
// Apply, as only an administrator may update a stream); a stream that is
// absent raises STREAM_MISSING. Nothing is updated here. Under the alarm
// repair rule (the default) nothing is corrected either; under the
// restore rule a deleted stream is recreated (see repair). A stream at a
// newer revision than this ledger has folded is left alone. The node
// calls Check once live, after each new settings event, on each JetStream
// advisory about the streams, and every CheckEvery.
func (c *Cluster) Check(ctx context.Context) {
	c.checking.Lock()
	defer c.checking.Unlock()
	c.mu.Lock()
	s := c.mu.rec.settings
	c.mu.dirty = false
	c.mu.Unlock()
	ok, note := true, compared
	failed := func(stream string, err error) {
		if ctx.Err() == nil {
			c.log.Warn("cannot compare stream with the cluster settings; trying again later", "stream", stream, "err", err)
		}
		c.mu.Lock()
		c.mu.dirty = true
		c.mu.Unlock()
		ok = false
	}
	for _, want := range []jetstream.StreamConfig{
		bus.EventsStreamConfig(s.Events, s.Revision),
		bus.LogsStreamConfig(s.Logs, s.Revision),
	} {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		drift, err := c.reconcile(cctx, s, want)
		if err == nil && len(drift) > 0 {
			// Raise the alarm before a restore mends the stream: the
			// checks report it once, then its clearing.
			c.report(want.Name, drift)
			c.setHealth(s, compared)
			switch {
			case s.Restores():
				if drift, err = c.repair(cctx, s, want, drift); err == nil && len(drift) == 0 {
					note = restored
				}
			case missing(drift):
				c.remedy(want)
			}
		}
		cancel()
		if err != nil {
			failed(want.Name, err)
			continue
		}
		c.report(want.Name, drift)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	drift, err := c.reconcileLeader(cctx, s.Revision, s.LeaseTTL)
	if err == nil && len(drift) > 0 {
		c.report(bus.LeaderBucketStream, drift)
		c.setHealth(s, compared)
		if s.Restores() {
			if drift, err = c.repairLeader(cctx, s, drift); err == nil && len(drift) == 0 {
				note = restored
			}
		}
	}
	cancel()
	if err != nil {
		failed(bus.LeaderBucketStream, err)
	} else {
		c.report(bus.LeaderBucketStream, drift)
	}
	c.setHealth(s, note)
	if ok {
		c.mu.Lock()
		c.mu.checked, c.mu.checkedRev = time.Now().UTC(), s.Revision
		c.mu.Unlock()
	}
}

// reconcile compares one stream with want, the settings s give it, and
// returns how it differs: field by field, and on FieldRevision when it
// carries an older settings revision than s (a stream without any, made
// by an older version or edited by hand with a tool that dropped the
// metadata, carries revision 0). It changes nothing: the settings are
// applied by an administrator (Apply).
func (c *Cluster) reconcile(ctx context.Context, s Settings, want jetstream.StreamConfig) ([]Drift, error) {
	rev := s.Revision
	st, err := c.cfg.JS.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return []Drift{{Stream: want.Name, Field: fieldExists, Expected: "true", Actual: "false"}}, nil
	}
	if err != nil {
		return nil, err
	}
	c.seen(want.Name, st.CachedInfo().State.LastSeq)
	have := st.CachedInfo().Config
	c.noteSized(want, have)
	switch hrev := bus.SettingsRevision(have); {
	case hrev > rev:
		c.warnOnce(fmt.Sprintf("newer/%s/%d/%d", want.Name, hrev, rev), "stream carries a cluster settings revision this ledger has not folded yet; not compared",
			"stream", want.Name, "stream_revision", hrev, "in_force", rev)
		return nil, nil
	case hrev < rev:
		// Only an administrator may update a stream (bus/natsauth):
		// agentctl cluster settings set applies a change (Apply). Until
		// then the stream is behind the settings, and says so.
		c.warnOnce(fmt.Sprintf("behind/%s/%d/%d", want.Name, hrev, rev), "stream is behind the cluster settings in force: an administrator applies them",
			"stream", want.Name, "stream_revision", hrev, "in_force", rev, "hint", applyHint(nil))
		return append(compare(want, have), revisionDrift(want.Name, rev, have)), nil
	}
	return compare(want, have), nil
}

// fieldExists is the drift field of a stream that is absent.
const fieldExists = "exists"

// FieldRevision is the drift field of a stream (or the leader bucket)
// that carries an older settings revision than the one in force: the
// settings are recorded but not applied to it yet. Its actual value is
// the stream's revision, or "none" when its metadata records none.
const FieldRevision = "revision"

// revisionDrift is the FieldRevision drift of stream, whose configuration
// is have, behind the revision rev in force.
func revisionDrift(stream string, rev uint64, have jetstream.StreamConfig) Drift {
	actual := "none"
	if _, ok := have.Metadata[bus.SettingsRevisionKey]; ok {
		actual = strconv.FormatUint(bus.SettingsRevision(have), 10)
	}
	return Drift{Stream: stream, Field: FieldRevision, Expected: strconv.FormatUint(rev, 10), Actual: actual}
}

func applyHint(err error) string {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == 10047 {
		return "the JetStream store cannot reserve that many bytes: free disk space, or lower the limit with agentctl cluster settings set"
	}
	return "an administrator applies the settings in force with agentctl cluster settings set --reapply (admin credentials); see agentctl cluster settings show"
}

// warnOnce logs msg at error level the first time key is seen.
func (c *Cluster) warnOnce(key, msg string, args ...any) {
	c.mu.Lock()
	seen := c.mu.warned[key]
	c.mu.warned[key] = true
	c.mu.Unlock()
	if !seen {
		c.log.Error(msg, args...)
	}
}

// report records a stream's drift, logging each new difference once at
// error level and each one that went away at info level.
func (c *Cluster) report(stream string, drift []Drift) {
	if drift == nil {
		drift = []Drift{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := map[Drift]bool{}
	for _, d := range drift {
		now[d] = true
		if !c.mu.logged[d] {
			c.mu.logged[d] = true
			c.log.Error("stream drifts from the cluster settings", "stream", d.Stream, "field", d.Field, "expected", d.Expected, "actual", d.Actual,
				"revision", c.mu.rec.settings.Revision,
				"repair", c.mu.rec.settings.Repair, "hint", driftHint(d, c.mu.rec.settings))
		}
	}
	for d := range c.mu.logged {
		if d.Stream == stream && !now[d] {
			delete(c.mu.logged, d)
			c.log.Info("stream drift resolved", "stream", d.Stream, "field", d.Field, "expected", d.Expected)
		}
	}
	c.mu.drift[stream] = drift
}

// noteSized records whether the stream have was made with a smaller byte
// limit than want asks to fit its store (bus.SizedToStore), for
// InForce.Sized.
func (c *Cluster) noteSized(want, have jetstream.StreamConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	asked, created, ok := bus.SizedToStore(have)
	if !ok || asked != want.MaxBytes || created != have.MaxBytes {
		delete(c.mu.sized, want.Name)
		return
	}
	c.mu.sized[want.Name] = Sized{Stream: want.Name, Asked: asked, Created: created}
}
