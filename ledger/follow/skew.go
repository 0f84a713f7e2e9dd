package follow

import (
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
)

// skewSamples is how many recent messages of a signer its skew estimate
// looks at.
const skewSamples = 8

// maxSigners bounds the signers tracked (only authenticated signers are:
// enrolled nodes and operators).
const maxSigners = 4096

// Skew levels: a signer's skew is fine, past half the leeway (warned: its
// messages are still accepted), or past the leeway (refused when ahead,
// about to expire in transit when behind).
const (
	skewFine = iota
	skewWarn
	skewPast
)

// skewTracker measures each signer's clock skew: a message's iat (the
// signer's clock when it signed) against its stream timestamp (the
// server's clock when it stored it). Transit and retries only make a
// sample earlier than the truth, never later, so the estimate is the
// largest of the signer's last samples: the least delayed one.
type skewTracker struct {
	leeway time.Duration
	log    *slog.Logger
	mu     struct {
		sync.Mutex
		signers map[string]*signerSkew
	}
}

type signerSkew struct {
	samples [skewSamples]time.Duration
	n, next int
	level   int
}

func newSkewTracker(leeway time.Duration, log *slog.Logger) *skewTracker {
	s := &skewTracker{leeway: leeway, log: log}
	s.mu.signers = make(map[string]*signerSkew)
	return s
}

// estimate is the largest sample.
func (s *signerSkew) estimate() time.Duration {
	est := s.samples[0]
	for _, d := range s.samples[1:s.n] {
		est = max(est, d)
	}
	return est
}

// observe records a message of signer signed at iat and stored at stream.
// It logs once when the signer's skew passes half the leeway, once when it
// passes the leeway, and once when it is back under a quarter of it.
func (t *skewTracker) observe(signer string, iat, stream time.Time) {
	if signer == "" || iat.IsZero() || stream.IsZero() {
		return
	}
	// iat has one-second resolution: a message signed at 12:00:00.9 says
	// 12:00:00. Compare like with like.
	sample := iat.Sub(stream.Truncate(time.Second))
	t.mu.Lock()
	s, ok := t.mu.signers[signer]
	if !ok {
		if len(t.mu.signers) >= maxSigners {
			clear(t.mu.signers)
		}
		s = &signerSkew{}
		t.mu.signers[signer] = s
	}
	s.samples[s.next] = sample
	s.next = (s.next + 1) % skewSamples
	s.n = min(s.n+1, skewSamples)
	est := s.estimate()
	abs := est.Abs()
	level := s.level
	switch {
	case abs > t.leeway:
		s.level = max(s.level, skewPast)
	case abs > t.leeway/2:
		s.level = max(s.level, skewWarn)
	case abs < t.leeway/4:
		s.level = skewFine
	}
	now := s.level
	t.mu.Unlock()
	raised, cleared := now > level, now == skewFine && level != skewFine
	switch {
	case raised && now == skewPast && est > 0:
		t.log.Error("signer's clock is ahead by more than the leeway: its events are rejected (not_yet_valid)", "signer", signer, "skew", est, "leeway", t.leeway)
	case raised && now == skewPast:
		t.log.Error("signer's clock is behind by more than the leeway: its events expire early, and are rejected (expired) once it is behind by TTL + leeway", "signer", signer, "skew", est, "leeway", t.leeway, "ttl", envelope.TTL)
	case raised:
		t.log.Warn("signer's clock is off by more than half the leeway: fix its time sync before its events are rejected", "signer", signer, "skew", est, "leeway", t.leeway)
	case cleared:
		t.log.Info("signer's clock is back in step", "signer", signer, "skew", est)
	}
}

// skews returns each signer's estimated skew (positive: its clock is
// ahead of the stream's).
func (t *skewTracker) skews() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Duration, len(t.mu.signers))
	for id, s := range t.mu.signers {
		out[id] = s.estimate()
	}
	return out
}
