package settings

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Applied is what Apply did to one stream (or the leader bucket).
type Applied struct {
	Stream string `json:"stream"`
	// From is the settings revision the stream carried before.
	From uint64 `json:"from_revision"`
	// Updated is false when the stream already carried the revision and
	// matched it, or was absent (a node's start or a restore creates it).
	Updated bool   `json:"updated"`
	Error   string `json:"error,omitempty"`
}

// Apply brings the streams and the leader bucket to s: each one whose
// revision is older than s.Revision, or that differs from s, is updated to
// s (its sequence, and metadata other than the settings', kept). Only an
// administrator's connection may update streams (bus/natsauth): agentctl
// cluster settings set calls it once the ledger has the settings in
// force; ledger nodes only compare. A stream carrying a newer revision is
// left alone. It returns what it did per stream, and an error joining the
// updates refused.
func Apply(ctx context.Context, js jetstream.JetStream, s Settings) ([]Applied, error) {
	var out []Applied
	var errs []error
	for _, want := range []jetstream.StreamConfig{
		bus.EventsStreamConfig(s.Events, s.Revision),
		bus.LogsStreamConfig(s.Logs, s.Revision),
	} {
		a, err := applyStream(ctx, js, want, func(have jetstream.StreamConfig) bool { return len(compare(want, have)) > 0 }, func(have jetstream.StreamConfig) jetstream.StreamConfig {
			upd := want
			upd.FirstSeq = have.FirstSeq
			upd.Metadata = maps.Clone(have.Metadata)
			if upd.Metadata == nil {
				upd.Metadata = map[string]string{}
			}
			maps.Copy(upd.Metadata, want.Metadata)
			delete(upd.Metadata, bus.SizedToStoreKey)
			return upd
		})
		out = append(out, a)
		if err != nil {
			errs = append(errs, err)
		}
	}
	a, err := applyStream(ctx, js, jetstream.StreamConfig{Name: bus.LeaderBucketStream}, func(have jetstream.StreamConfig) bool { return have.MaxAge != s.LeaseTTL },
		func(have jetstream.StreamConfig) jetstream.StreamConfig { return bus.WithLeaseTTL(have, s.LeaseTTL, s.Revision) })
	out = append(out, a)
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// applyStream updates one stream to update(have) when it is behind rev
// or differs (differs(have)).
func applyStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, differs func(jetstream.StreamConfig) bool, update func(jetstream.StreamConfig) jetstream.StreamConfig) (Applied, error) {
	a := Applied{Stream: want.Name}
	st, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return a, nil
	}
	if err != nil {
		a.Error = err.Error()
		return a, fmt.Errorf("settings: stream %s: %w", want.Name, err)
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
		a.Error = err.Error()
		return a, fmt.Errorf("settings: update stream %s to revision %d: %w (%s)", want.Name, rev, err, applyHint(err))
	}
	a.Updated = true
	return a, nil
}
