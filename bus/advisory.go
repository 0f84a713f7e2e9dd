package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamAdvisoryPrefix prefixes the advisories JetStream publishes, in the
// stream's account, when a stream is created, updated or deleted:
// $JS.EVENT.ADVISORY.STREAM.<ACTION>.<stream>.
const StreamAdvisoryPrefix = "$JS.EVENT.ADVISORY.STREAM."

// The stream advisory actions WatchStreams reports.
const (
	StreamCreated = "CREATED"
	StreamUpdated = "UPDATED"
	StreamDeleted = "DELETED"
)

// WatchStreams calls fn with the action and the stream's name each time
// JetStream announces that one of the named streams was created, updated
// or deleted (its other advisories, leader elections and the like, are
// not passed on). fn runs on the connection's delivery goroutine: it must
// return quickly. The returned function stops the watch.
//
// Advisories are best effort (core NATS, no replay): a watcher that was
// disconnected misses them, so a watcher should also compare the streams
// now and then.
func WatchStreams(nc *nats.Conn, names []string, fn func(action, stream string)) (stop func(), err error) {
	var subs []*nats.Subscription
	stop = func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for _, name := range names {
		s, err := nc.Subscribe(StreamAdvisoryPrefix+"*."+name, func(m *nats.Msg) {
			rest := strings.TrimPrefix(m.Subject, StreamAdvisoryPrefix)
			action, stream, ok := strings.Cut(rest, ".")
			if !ok {
				return
			}
			switch action {
			case StreamCreated, StreamUpdated, StreamDeleted:
				fn(action, stream)
			}
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("bus: watch stream %s: %w", name, err)
		}
		subs = append(subs, s)
	}
	// The subscriptions must be known to the server before a change can
	// be missed: flush them.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		stop()
		return nil, fmt.Errorf("bus: watch streams: %w", err)
	}
	return stop, nil
}

// RecreateStream creates the stream cfg, absent (deleted), with its
// sequence continuing at firstSeq (0 or 1: from the start): messages
// published to it are numbered from there, so readers that remember
// stream sequences (the ledger's applied sequence, durable consumers'
// acknowledged positions) see the sequence go on, not restart. A stream
// that exists meanwhile (another node made it) is not an error.
func RecreateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, firstSeq uint64) error {
	if firstSeq > 1 {
		cfg.FirstSeq = firstSeq
	}
	for {
		_, err := js.CreateStream(ctx, cfg)
		if !storeBusy(err) {
			if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return fmt.Errorf("bus: recreate stream %s at sequence %d: %w", cfg.Name, max(firstSeq, 1), err)
			}
			return nil
		}
		// The server is still removing the deleted stream's store.
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus: recreate stream %s at sequence %d: %w (gave up: %w)", cfg.Name, max(firstSeq, 1), err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// storeBusy reports the server's refusal to make a stream's store while
// the store of the stream of that name just deleted is being removed
// ("error creating store for stream", code 10049).
func storeBusy(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10049
}

// RecreateLeaderBucket creates the leader bucket, absent (deleted), with
// lease TTL ttl at cluster settings revision rev and the given replicas.
// An existing bucket is left as it is.
func RecreateLeaderBucket(ctx context.Context, js jetstream.JetStream, ttl time.Duration, rev uint64, replicas int) error {
	for {
		err := ensureLeaderBucket(ctx, js, ttl, rev, max(replicas, 1))
		if !storeBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
