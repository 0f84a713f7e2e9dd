package settings

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Applied is what Apply did to one stream (or the leader bucket).
type Applied struct {
	Stream string `json:"stream"`
	// From is the settings revision the stream carried before.
	From uint64 `json:"from_revision"`
	// Updated is false when the stream already carried the revision and
	// matched it, carried a newer one, or was absent (a node's start or a
	// restore creates it).
	Updated bool   `json:"updated"`
	Error   string `json:"error,omitempty"`
}

// Apply brings the streams and the leader bucket to s: each one whose
// revision is older than s.Revision, that records none, or that differs
// from s, is updated to s (its sequence, and metadata other than the
// settings', kept). Only an administrator's connection may update streams
// (bus/natsauth): agentctl cluster settings set calls it once the ledger
// has the settings in force; ledger nodes only compare. A stream carrying
// a newer revision is left alone; applying twice changes nothing the
// second time. It returns what it did per stream, and an error joining
// the updates that failed. An update the server refuses for want of
// permission is returned as nats.ErrPermissionViolation, and Apply stops
// there: the other updates would be refused the same way.
func Apply(ctx context.Context, js jetstream.JetStream, s Settings) ([]Applied, error) {
	var out []Applied
	var errs []error
	for _, want := range []jetstream.StreamConfig{
		bus.EventsStreamConfig(s.Events, s.Revision),
		bus.LogsStreamConfig(s.Logs, s.Revision),
	} {
		a, err := applyStream(ctx, js, want.Name,
			func(have jetstream.StreamConfig) bool { return len(compare(want, have)) > 0 },
			func(have jetstream.StreamConfig) jetstream.StreamConfig { return updated(want, have) })
		out = append(out, a)
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, nats.ErrPermissionViolation) {
				return out, errors.Join(errs...)
			}
		}
	}
	a, err := applyStream(ctx, js, bus.LeaderBucketStream,
		func(have jetstream.StreamConfig) bool { return have.MaxAge != s.LeaseTTL },
		func(have jetstream.StreamConfig) jetstream.StreamConfig {
			return bus.WithLeaseTTL(have, s.LeaseTTL, s.Revision)
		})
	out = append(out, a)
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// updated is want with have's first sequence and have's metadata under
// want's (a stream sized to its store, bus.SizedToStoreKey, is asked the
// settings' byte limit again).
func updated(want, have jetstream.StreamConfig) jetstream.StreamConfig {
	upd := want
	upd.FirstSeq = have.FirstSeq
	upd.Metadata = maps.Clone(have.Metadata)
	if upd.Metadata == nil {
		upd.Metadata = map[string]string{}
	}
	maps.Copy(upd.Metadata, want.Metadata)
	delete(upd.Metadata, bus.SizedToStoreKey)
	return upd
}

// applyStream updates the stream name to update(have) when it carries an
// older settings revision than update gives it, records none, or
// differs(have).
func applyStream(ctx context.Context, js jetstream.JetStream, name string, differs func(jetstream.StreamConfig) bool, update func(jetstream.StreamConfig) jetstream.StreamConfig) (Applied, error) {
	a := Applied{Stream: name}
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return a, nil
	}
	if err != nil {
		a.Error = err.Error()
		return a, fmt.Errorf("settings: stream %s: %w", name, err)
	}
	have := st.CachedInfo().Config
	a.From = bus.SettingsRevision(have)
	upd := update(have)
	rev := bus.SettingsRevision(upd)
	_, recorded := have.Metadata[bus.SettingsRevisionKey]
	if a.From > rev || (a.From == rev && recorded && !differs(have)) {
		return a, nil
	}
	if _, err := js.UpdateStream(ctx, upd); err != nil {
		err = refusal(js.Conn(), "$JS.API.STREAM.UPDATE."+name, err)
		a.Error = err.Error()
		return a, fmt.Errorf("settings: update stream %s to revision %d: %w (%s)", name, rev, err, applyHint(err))
	}
	a.Updated = true
	return a, nil
}

// refusal returns the permissions violation nc last reported for a
// publish to subject, with err (what the request returned: a server that
// refuses a request does not answer it, so the request times out), or err
// alone when there is none.
func refusal(nc *nats.Conn, subject string, err error) error {
	last := nc.LastError()
	if errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+subject+`"`) {
		return fmt.Errorf("%w (the request: %v)", last, err)
	}
	return err
}
