package bus

import (
	"context"
	"errors"
	"fmt"
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

// StreamConfig sizes the streams.
type StreamConfig struct {
	// Replicas for streams and buckets: 1 embedded, 3 on a cluster.
	Replicas int
	// LeaseTTL is the leader bucket's TTL.
	LeaseTTL time.Duration
	// LogMaxAge and LogMaxBytes bound the logs stream.
	LogMaxAge   time.Duration
	LogMaxBytes int64
}

func (c *StreamConfig) defaults() {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 5 * time.Second
	}
	if c.LogMaxAge == 0 {
		c.LogMaxAge = 7 * 24 * time.Hour
	}
	if c.LogMaxBytes == 0 {
		c.LogMaxBytes = 1 << 30
	}
}

// EventsStreamConfig is the configuration of AGENTIC_EVENTS.
func EventsStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "agentic signed events: the log every ledger folds",
		Subjects:    []string{event.SubjectAll},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Replicas:    replicas,
		Duplicates:  2 * time.Minute,
		MaxMsgSize:  1 << 20,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// EnsureStreams creates or updates the streams and the leader bucket. It
// retries while the cluster has no JetStream meta leader yet, until ctx ends.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) error {
	cfg.defaults()
	return retry(ctx, func() error {
		// An operator may have raised a stream's replicas (R3 on a
		// cluster); a node's start never lowers them.
		replicas := func(name string) int {
			if s, err := js.Stream(ctx, name); err == nil {
				if info, err := s.Info(ctx); err == nil && info.Config.Replicas > cfg.Replicas {
					return info.Config.Replicas
				}
			}
			return cfg.Replicas
		}
		if _, err := js.CreateOrUpdateStream(ctx, EventsStreamConfig(replicas(EventsStream))); err != nil {
			return fmt.Errorf("bus: stream %s: %w", EventsStream, err)
		}
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        LogsStream,
			Description: "agentic step output (redacted), not ledger facts",
			Subjects:    []string{LogSubjectPrefix + ">"},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Replicas:    replicas(LogsStream),
			MaxAge:      cfg.LogMaxAge,
			MaxBytes:    cfg.LogMaxBytes,
			Discard:     jetstream.DiscardOld,
		}); err != nil {
			return fmt.Errorf("bus: stream %s: %w", LogsStream, err)
		}
		if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      LeaderBucket,
			Description: "orchestrator leader lease and epoch",
			TTL:         cfg.LeaseTTL,
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas("KV_" + LeaderBucket),
		}); err != nil {
			return fmt.Errorf("bus: bucket %s: %w", LeaderBucket, err)
		}
		return nil
	})
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
