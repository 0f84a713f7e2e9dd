package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
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
	// zero: 1 embedded, 3 on a cluster.
	Replicas int
	// LeaseTTL is the leader bucket's TTL if EnsureStreams creates it
	// (event.DefaultLeaseTTL if 0); an existing bucket is left as it is.
	LeaseTTL time.Duration
	// Logger hears about streams created smaller than asked (nil:
	// discarded).
	Logger *slog.Logger
}

func (c *StreamConfig) defaults() {
	if c.Replicas == 0 {
		c.Replicas = 1
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
const minFallbackBytes = 64 << 20

// EnsureStreams creates the streams and the leader bucket that are absent.
// It never changes an existing stream or bucket: cluster settings (stream
// limits, the lease TTL) are applied by ledger nodes from the ledger
// (node/settings), and a stream that differs from them is drift, reported,
// not corrected.
// It retries while the cluster has no JetStream meta leader yet, until ctx
// ends.
//
// JetStream reserves a file stream's MaxBytes against the server's store
// limit (by default 75% of the disk space free when the server started).
// When the reservation is refused, the stream is created with half the
// bytes, then half again, down to 64 MiB, and without a byte limit (age
// only) if even that does not fit: a node on a small disk still starts, and
// the ledger nodes report the difference from the settings as drift.
// Sizing the reservations from the data directory's disk is left to a
// later version.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) error {
	cfg.defaults()
	logger := cfg.Logger
	return retry(ctx, func() error {
		if err := createAbsent(ctx, js, EventsStreamConfig(cfg.Events, cfg.Revision), logger); err != nil {
			return err
		}
		if err := createAbsent(ctx, js, LogsStreamConfig(cfg.Logs, cfg.Revision), logger); err != nil {
			return err
		}
		return ensureLeaderBucket(ctx, js, cfg.LeaseTTL, cfg.Revision, cfg.Replicas)
	})
}

// createAbsent creates the stream sc unless it exists, shrinking its byte
// limit while the server cannot reserve it.
func createAbsent(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, logger *slog.Logger) error {
	_, err := js.Stream(ctx, sc.Name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", sc.Name, err)
	}
	asked := sc.MaxBytes
	for {
		_, err = js.CreateStream(ctx, sc)
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
	case sc.MaxBytes != asked:
		logger.Error("stream created with a smaller byte limit than the cluster settings ask: the JetStream store cannot reserve that much (free disk space, or lower the limit with agentctl cluster settings set)",
			"stream", sc.Name, "asked_bytes", asked, "created_bytes", sc.MaxBytes)
	}
	return nil
}

// isStorageExceeded reports the server's refusal to reserve a stream's
// MaxBytes ("insufficient storage resources available", code 10047).
func isStorageExceeded(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10047
}

func retry(ctx context.Context, f func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

func retryable(err error) bool {
	return errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
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
