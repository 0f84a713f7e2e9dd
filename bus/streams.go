package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the protocol's streams and buckets.
const (
	EventsStream = "AGENTIC_EVENTS"
	LogsStream   = "AGENTIC_LOGS"
	LeaderBucket = "agentic_leader"
	// LogSubjectPrefix prefixes step output subjects: agentic.log.<run>.<step>.
	LogSubjectPrefix = "agentic.log."
)

// LogSubject is the subject a step attempt's output goes to.
func LogSubject(run, step string) string { return LogSubjectPrefix + run + "." + step }

// StreamSettings are the part of a stream's configuration that is a cluster
// setting: its limits and replicas. A zero MaxAge or MaxBytes means no
// limit of that kind.
type StreamSettings struct {
	MaxAge   time.Duration
	MaxBytes int64
	Replicas int
}

// Default stream settings, used until the ledger records cluster settings.
// AGENTIC_EVENTS is a transport buffer, not the archive (ledger nodes keep
// every event in Pebble): it needs to hold what a ledger node or an
// executor that was down must still read when it comes back. 30 days or
// 4 GiB, whichever is reached first (about ten million events at the
// measured ~400 bytes of stream per event). Step output is kept 7 days or
// 1 GiB. See docs/architecture.md, "Retention".
var (
	DefaultEventsSettings = StreamSettings{MaxAge: 30 * 24 * time.Hour, MaxBytes: 4 << 30, Replicas: 1}
	DefaultLogsSettings   = StreamSettings{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, Replicas: 1}
)

// SettingsRevisionKey is the stream metadata key that records the revision
// of the cluster settings a stream was created or last updated with (0:
// the defaults). Comparing it with the ledger's revision tells a change
// not yet applied (older) from drift (same revision, other values).
const SettingsRevisionKey = "agentic_settings_revision"

// SizedToStoreKey is the stream metadata key that records a stream made
// with a smaller byte limit than asked because the JetStream store could
// not reserve it ("<asked>:<created>" bytes): the settings comparison takes
// that limit for what the settings ask, not for drift, as long as both
// numbers still hold.
const SizedToStoreKey = "agentic_sized_to_store"

// SizedToStore returns the byte limit a stream was asked to have and the
// one it was made with when it was made smaller to fit its store (ok false
// otherwise).
func SizedToStore(cfg jetstream.StreamConfig) (asked, created int64, ok bool) {
	a, c, found := strings.Cut(cfg.Metadata[SizedToStoreKey], ":")
	if !found {
		return 0, 0, false
	}
	asked, err1 := strconv.ParseInt(a, 10, 64)
	created, err2 := strconv.ParseInt(c, 10, 64)
	return asked, created, err1 == nil && err2 == nil
}

// SettingsRevision returns the cluster settings revision recorded in a
// stream's metadata; 0 when there is none (the defaults, or a stream made
// before revisions were recorded).
func SettingsRevision(cfg jetstream.StreamConfig) uint64 {
	rev, err := strconv.ParseUint(cfg.Metadata[SettingsRevisionKey], 10, 64)
	if err != nil {
		return 0
	}
	return rev
}

// StreamConfig says what EnsureStreams creates when a stream is absent.
type StreamConfig struct {
	// Events and Logs are the settings of the two streams. A zero value
	// (Replicas 0) takes DefaultEventsSettings / DefaultLogsSettings with
	// Replicas below.
	Events, Logs StreamSettings
	// Revision is the cluster settings revision Events and Logs come from
	// (0: the defaults); it is recorded in the streams' metadata.
	Revision uint64
	// Replicas for the leader bucket, and for streams whose settings are
	// zero; 0 takes DefaultReplicas of the connection (3 on a NATS
	// cluster, 1 on a lone server).
	Replicas int
	// LeaseTTL is the leader bucket's TTL if EnsureStreams creates it
	// (event.DefaultLeaseTTL if 0); an existing bucket is left as it is.
	LeaseTTL time.Duration
	// PlacementWait is how long a stream or bucket whose replicas the
	// cluster cannot place yet (it knows fewer JetStream servers than
	// replicas) is retried before it is created with fewer (see
	// EnsureStreams); 0 means DefaultPlacementWait.
	PlacementWait time.Duration
	// Logger hears about streams created smaller than asked (nil:
	// discarded).
	Logger *slog.Logger
	// StoreLimit is the JetStream store limit of the server when known
	// (the embedded server's, Embedded.MaxStore; 0: unknown): a stream
	// created absent reserves at most a quarter of it (see EnsureStreams).
	StoreLimit int64
	// EventsFirstSeq, when set, is asked only if AGENTIC_EVENTS is absent:
	// a value above 1 creates it with its sequence continuing there
	// (jetstream.StreamConfig.FirstSeq). A ledger node passes the stream
	// sequence after its ledger's head, so that a stream deleted while it
	// was down comes back continuing the ledger instead of at 1, which its
	// ledger would refuse as a stream behind it. An error stops
	// EnsureStreams.
	EventsFirstSeq func() (uint64, error)
}

// DefaultPlacementWait is how long EnsureStreams waits for a cluster to
// have the servers a stream's replicas need: servers of a cluster started
// together come up within seconds of each other.
const DefaultPlacementWait = 15 * time.Second

// ClusterReplicas is the replica count of the streams and the leader bucket
// on a NATS cluster: three copies survive the loss of any one server, with
// a majority (two) left to accept writes.
const ClusterReplicas = 3

// DefaultReplicas is the replica count the defaults give on the server nc
// is connected to: ClusterReplicas when it belongs to a NATS cluster (it
// announces a cluster name), 1 on a lone server. Every node of a cluster
// derives the same count, so ledger nodes compare the streams with what
// EnsureStreams created. On a cluster of fewer than three JetStream
// servers the streams are created with fewer replicas than this (see
// EnsureStreams) and ledger nodes report the difference as drift until the
// cluster settings record the count the cluster can hold.
func DefaultReplicas(nc *nats.Conn) int {
	if nc != nil && nc.ConnectedClusterName() != "" {
		return ClusterReplicas
	}
	return 1
}

func (c *StreamConfig) defaults(nc *nats.Conn) {
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas(nc)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = event.DefaultLeaseTTL
	}
	if c.Events.Replicas == 0 {
		c.Events = DefaultEventsSettings
		c.Events.Replicas = c.Replicas
	}
	if c.Logs.Replicas == 0 {
		c.Logs = DefaultLogsSettings
		c.Logs.Replicas = c.Replicas
	}
	if c.PlacementWait <= 0 {
		c.PlacementWait = DefaultPlacementWait
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// limit is a JetStream limit: -1 for none.
func limit(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// EventsStreamConfig is the configuration of AGENTIC_EVENTS with settings s
// at cluster settings revision rev.
func EventsStreamConfig(s StreamSettings, rev uint64) jetstream.StreamConfig {
	c := streamConfig(EventsStream, "agentic signed events: the log every ledger folds", event.SubjectAll, s, rev)
	c.MaxMsgSize = 1 << 20
	c.DenyDelete, c.DenyPurge = true, true
	return c
}

// LogsStreamConfig is the configuration of AGENTIC_LOGS with settings s at
// cluster settings revision rev.
func LogsStreamConfig(s StreamSettings, rev uint64) jetstream.StreamConfig {
	return streamConfig(LogsStream, "agentic step output (redacted), not ledger facts", LogSubjectPrefix+">", s, rev)
}

// streamConfig is what both streams share: file storage, limits retention
// by the settings' age and bytes (oldest dropped first), and the settings
// revision in the metadata.
func streamConfig(name, description, subject string, s StreamSettings, rev uint64) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              name,
		Description:       description,
		Subjects:          []string{subject},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Replicas:          s.Replicas,
		MaxAge:            s.MaxAge,
		MaxBytes:          limit(s.MaxBytes),
		MaxMsgs:           -1,
		MaxMsgsPerSubject: -1,
		MaxConsumers:      -1,
		Discard:           jetstream.DiscardOld,
		Duplicates:        2 * time.Minute,
		Metadata:          map[string]string{SettingsRevisionKey: strconv.FormatUint(rev, 10)},
	}
}

// minFallbackBytes is the smallest byte limit EnsureStreams tries when the
// server cannot reserve a stream's MaxBytes.
const minFallbackBytes = 1 << 20

// EnsureStreams creates the streams and the leader bucket that are absent.
// It never changes an existing stream or bucket: cluster settings (stream
// limits, the lease TTL) are applied by ledger nodes from the ledger
// (node/settings), and a stream that differs from them is drift, reported,
// not corrected.
// It retries while the cluster has no JetStream meta leader yet, until ctx
// ends.
//
// Replicas: on a cluster the streams and the bucket are made with
// cfg.Replicas (DefaultReplicas: 3). While the cluster cannot place that
// many — it knows fewer JetStream servers than replicas: a server that
// never started does not count; one that is down but was seen does, and
// takes its replica when it is back — the creation is retried for
// cfg.PlacementWait; then the stream is created with as many replicas as
// can be placed, down to one, and an error is logged: the ledger nodes
// report it as drift, and agentctl cluster settings set --reapply raises
// it once the servers are there. The leader bucket is created the same
// way; an existing one is left as it is.
//
// JetStream reserves a file stream's MaxBytes against the server's store
// limit (the embedded server's is sized from the data directory's file
// system, see StoreShare; an external server's is its max_store). Where
// that limit is known (cfg.StoreLimit) a stream is created with at most a
// quarter of it, so that both streams and the leader bucket find room: on
// a 64 MB data dir (a 32 MiB store) each stream gets 8 MiB. When the
// reservation is still refused, the byte limit is halved until it fits;
// below 1 MiB the stream is created without a byte limit (age only), the
// last resort. A stream is sized before it is created, never updated
// after: only an administrator may update a stream (bus/natsauth). A
// node on a small disk starts; a stream made smaller records it
// (SizedToStoreKey) and is not drift.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) error {
	cfg.defaults(js.Conn())
	e := &ensurer{js: js, cfg: cfg, log: cfg.Logger}
	return retry(ctx, e.log, func(ctx context.Context) error {
		if err := e.createAbsent(ctx, EventsStreamConfig(cfg.Events, cfg.Revision)); err != nil {
			return err
		}
		if err := e.createAbsent(ctx, LogsStreamConfig(cfg.Logs, cfg.Revision)); err != nil {
			return err
		}
		if err := e.leaderBucket(ctx); err != nil {
			return err
		}
		return e.artifactBucket(ctx)
	})
}

// artifactBucket creates the artifact bucket (bus/artifact) unless it
// exists, with the replicas of the leader bucket — fewer when the cluster
// cannot place them after PlacementWait, as streams are.
func (e *ensurer) artifactBucket(ctx context.Context) error {
	asked := e.cfg.Replicas
	for replicas := asked; ; replicas-- {
		err := artifact.Ensure(ctx, e.js, artifact.Config{Replicas: replicas})
		switch {
		case err == nil:
			if replicas < asked {
				e.log.Error("artifact bucket created with fewer replicas than asked: the NATS cluster could not place them; once the servers are up, raise them with nats stream edit "+artifact.BucketStream+" --replicas N",
					"bucket", artifact.Bucket, "asked_replicas", asked, "replicas", replicas)
			}
			return nil
		case !isPlacement(err) || replicas <= 1:
			return err
		}
		if werr := e.placementRefused(artifact.Bucket, replicas, err); werr != nil {
			return werr
		}
	}
}

// ensurer is one EnsureStreams call: it remembers since when the cluster
// has been refusing to place replicas.
type ensurer struct {
	js  jetstream.JetStream
	cfg StreamConfig
	log *slog.Logger
	// unplaced is when the first placement refusal was seen (zero: none).
	unplaced time.Time
}

// errPlacement is returned (and retried) while the cluster cannot place a
// stream's replicas and PlacementWait has not passed.
var errPlacement = errors.New("bus: the NATS cluster cannot place the replicas yet (it knows fewer JetStream servers than replicas)")

// placementRefused reports, for a placement error, whether to wait more
// (errPlacement) or to try fewer replicas (nil). A server that is not
// clustered never will be: no waiting for it.
func (e *ensurer) placementRefused(name string, replicas int, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == 10074 {
		return nil
	}
	if e.unplaced.IsZero() {
		e.unplaced = time.Now()
	}
	if time.Since(e.unplaced) < e.cfg.PlacementWait {
		return fmt.Errorf("%w: %s with %d replicas: %w", errPlacement, name, replicas, err)
	}
	return nil
}

// createAbsent creates the stream sc unless it exists, shrinking its byte
// limit while the server cannot reserve it and its replicas while the
// cluster cannot place them (after PlacementWait).
func (e *ensurer) createAbsent(ctx context.Context, sc jetstream.StreamConfig) error {
	_, err := e.js.Stream(ctx, sc.Name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", sc.Name, err)
	}
	if sc.Name == EventsStream && e.cfg.EventsFirstSeq != nil {
		first, err := e.cfg.EventsFirstSeq()
		if err != nil {
			return fmt.Errorf("bus: stream %s is absent and where it must continue is unknown: %w", sc.Name, err)
		}
		if first > 1 {
			sc.FirstSeq = first
			e.log.Warn("stream absent: created continuing after the ledger's head (it was deleted, or its store lost)",
				"stream", sc.Name, "first_seq", first)
		}
	}
	asked, askedReplicas := sc.MaxBytes, sc.Replicas
	sc.Metadata = maps.Clone(sc.Metadata)
	sized := func() {
		if sc.MaxBytes == asked {
			return
		}
		if sc.Metadata == nil {
			sc.Metadata = map[string]string{}
		}
		sc.Metadata[SizedToStoreKey] = strconv.FormatInt(asked, 10) + ":" + strconv.FormatInt(sc.MaxBytes, 10)
	}
	if quarter := e.cfg.StoreLimit / 4; quarter > 0 && sc.MaxBytes > quarter {
		sc.MaxBytes = max(quarter, minFallbackBytes)
	}
	for {
		sized()
		_, err = e.js.CreateStream(ctx, sc)
		if isPlacement(err) && sc.Replicas > 1 {
			if werr := e.placementRefused(sc.Name, sc.Replicas, err); werr != nil {
				return werr
			}
			sc.Replicas--
			continue
		}
		if !isStorageExceeded(err) || sc.MaxBytes < 0 {
			break
		}
		if sc.MaxBytes /= 2; sc.MaxBytes < minFallbackBytes {
			sc.MaxBytes = -1
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
		return nil // another node made it meanwhile
	case err != nil:
		return fmt.Errorf("bus: create stream %s: %w", sc.Name, err)
	}
	if sc.MaxBytes != asked {
		e.log.Error("stream created with a smaller byte limit than the cluster settings ask: the JetStream store cannot reserve that much (free disk space, or lower the limit with agentctl cluster settings set)",
			"stream", sc.Name, "asked_bytes", asked, "created_bytes", sc.MaxBytes)
	}
	if sc.Replicas != askedReplicas {
		e.log.Error("stream created with fewer replicas than the cluster settings ask: the NATS cluster could not place them (it knows fewer JetStream servers); once the servers are up, apply the settings with agentctl cluster settings set --reapply",
			"stream", sc.Name, "asked_replicas", askedReplicas, "created_replicas", sc.Replicas, "waited", e.cfg.PlacementWait)
	}
	return nil
}

// leaderBucket creates the leader bucket unless it exists
// (ensureLeaderBucket: an existing bucket is left as it is), with fewer
// replicas when the cluster cannot place them after PlacementWait, as
// streams are.
func (e *ensurer) leaderBucket(ctx context.Context) error {
	asked := e.cfg.Replicas
	for replicas := asked; ; replicas-- {
		err := ensureLeaderBucket(ctx, e.js, e.cfg.LeaseTTL, e.cfg.Revision, replicas)
		switch {
		case err == nil:
			if replicas < asked {
				e.log.Error("leader bucket created with fewer replicas than asked: the NATS cluster could not place them (it knows fewer JetStream servers); once the servers are up, raise them with nats stream edit "+LeaderBucketStream+" --replicas N",
					"bucket", LeaderBucket, "asked_replicas", asked, "replicas", replicas)
			}
			return nil
		case !isPlacement(err) || replicas <= 1:
			return err
		}
		if werr := e.placementRefused(LeaderBucket, replicas, err); werr != nil {
			return werr
		}
	}
}

// isPlacement reports the cluster's refusal to place a stream's replicas:
// fewer selectable JetStream servers than replicas ("no suitable peers for
// placement", code 10005, for any reason but storage), or replicas asked of
// a server that is not clustered (10074).
func isPlacement(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == 10005 && !strings.Contains(apiErr.Description, "insufficient storage") ||
		apiErr.ErrorCode == 10074
}

// isStorageExceeded reports the server's refusal to reserve a stream's
// MaxBytes: "insufficient storage resources available" (code 10047) on a
// lone server; on a cluster, no peer with that much storage ("no suitable
// peers for placement, insufficient storage", 10005).
func isStorageExceeded(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == 10047 ||
		apiErr.ErrorCode == 10005 && strings.Contains(apiErr.Description, "insufficient storage")
}

// attemptTimeout bounds one attempt of retry: a JetStream API request sent
// while a cluster has no meta leader, or while another node creates the
// same stream, may get no answer at all, and must not hold the whole of
// ctx. (Creating a stream on a cluster takes tens of milliseconds here.)
const attemptTimeout = 3 * time.Second

// retry calls f until it succeeds, fails with an error that waiting will
// not mend, or ctx ends; each call gets at most attemptTimeout. Each retry
// is logged, so a node waiting for its cluster says why.
func retry(ctx context.Context, logger *slog.Logger, f func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		logger.Info("waiting for JetStream", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

func retryable(err error) bool {
	return errors.Is(err, errPlacement) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) ||
		isNoLeader(err)
}

func isNoLeader(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 10008: JetStream cluster not available / no meta leader; 503s.
		return apiErr.ErrorCode == 10008 || apiErr.Code == 503
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded)
}
