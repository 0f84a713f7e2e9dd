package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A run's artifact bytes are reserved before they are stored, so that
// steps of one run storing at the same time — on one executor or on
// several — cannot together pass the run's cap
// (budgets.run_artifact_bytes): each store adds its size to the run's
// reserved total with a compare-and-set on one subject of the bucket's
// stream, refused when the total would pass the cap.
//
// The total lives in the last message of the subject
// "$O.agentic_artifacts.C.runbytes.<run>" (ReserveSubject): under the
// chunks' prefix, which executors may already write and which no
// object's metadata names, so no listing sees it. Each update rolls the
// subject up to one message, written only if the subject's last sequence
// is still the one read (Nats-Expected-Last-Subject-Sequence); a
// concurrent update makes it read again. The bucket's age limit prunes it
// with the rest.

// ReserveSubject is the subject of run's reserved total.
func ReserveSubject(run string) string { return "$O." + Bucket + ".C.runbytes." + run }

// reserved is the payload of a run's reserved total.
type reserved struct {
	// Bytes reserved by the run's stores, those stored and those under
	// way.
	Bytes int64 `json:"bytes"`
}

// ErrRunFull: the run's artifacts, with this one, would pass the run's
// cap. It wraps ErrTooLarge, so errors.Is(err, ErrTooLarge) holds too.
var ErrRunFull = fmt.Errorf("%w: the run's artifacts would pass the run's cap", ErrTooLarge)

// reserveBackoff is the pause before reading again after a concurrent
// update; reserveTries bounds the reads (a reader of a replica that
// stays behind the stream's leader would otherwise loop).
const (
	reserveBackoff = 5 * time.Millisecond
	reserveTries   = 200
)

// Reserve adds n bytes to run's reserved total unless that would pass
// limit, atomically across every node storing for the run. recorded is
// what the ledger says the run's artifacts hold (task.assigned's
// artifact_bytes): the total counts from at least that, so artifacts
// recorded without a reservation (before one was kept, or once the
// bucket's age limit pruned it) still count. It returns the total after
// the reservation, or an error wrapping ErrRunFull that says the cap and
// what is left. A caller that then stores fewer bytes, or none, gives the
// difference back with Release.
func (s *Store) Reserve(ctx context.Context, run string, n, recorded, limit int64) (int64, error) {
	if err := checkRun(run); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("artifact: reserve %d bytes for run %s: a negative size", n, run)
	}
	return s.update(ctx, run, func(cur int64) (int64, error) {
		base := max(cur, recorded)
		if base+n > limit {
			return 0, fmt.Errorf("%w: %d bytes asked, the run may hold %d bytes in all and %d are left",
				ErrRunFull, n, limit, max(limit-base, 0))
		}
		return base + n, nil
	})
}

// Release gives n bytes reserved for run back: a store that failed, or
// that stored fewer bytes than it reserved.
func (s *Store) Release(ctx context.Context, run string, n int64) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	_, err := s.update(ctx, run, func(cur int64) (int64, error) { return max(cur-n, 0), nil })
	return err
}

// Reserved returns run's reserved total (0 when none is kept).
func (s *Store) Reserved(ctx context.Context, run string) (int64, error) {
	if err := checkRun(run); err != nil {
		return 0, err
	}
	cur, _, err := s.readReserved(ctx, run)
	return cur, err
}

func checkRun(run string) error {
	if run == "" || strings.ContainsAny(run, ".*> \t\r\n") {
		return fmt.Errorf("artifact: %q is not a run id", run)
	}
	return nil
}

// update sets run's total to next(current) with a compare-and-set,
// reading again after a concurrent update.
func (s *Store) update(ctx context.Context, run string, next func(int64) (int64, error)) (int64, error) {
	subj := ReserveSubject(run)
	for try := 1; ; try++ {
		cur, seq, err := s.readReserved(ctx, run)
		if err != nil {
			return 0, err
		}
		v, err := next(cur)
		if err != nil {
			return 0, err
		}
		m := nats.NewMsg(subj)
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		if m.Data, err = json.Marshal(reserved{Bytes: v}); err != nil {
			return 0, fmt.Errorf("artifact: run %s's reserved bytes: %w", run, err)
		}
		_, err = s.pub.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq))
		if err == nil {
			return v, nil
		}
		if !wrongLastSequence(err) {
			return 0, fmt.Errorf("artifact: run %s's reserved bytes: %w", run, err)
		}
		if try == reserveTries {
			return 0, fmt.Errorf("artifact: run %s's reserved bytes: changed under each of %d updates: %w", run, try, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("artifact: run %s's reserved bytes: %w", run, ctx.Err())
		case <-time.After(reserveBackoff):
		}
	}
}

// readReserved returns run's total and the sequence of its message (0:
// none).
func (s *Store) readReserved(ctx context.Context, run string) (int64, uint64, error) {
	str, err := s.bucketStream(ctx)
	if err != nil {
		return 0, 0, err
	}
	m, err := str.GetLastMsgForSubject(ctx, ReserveSubject(run))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("artifact: run %s's reserved bytes: %w", run, err)
	}
	var r reserved
	if err := json.Unmarshal(m.Data, &r); err != nil || r.Bytes < 0 {
		// Not ours: written over by something else. Count from the
		// ledger's figure again rather than refuse every store.
		return 0, m.Sequence, nil
	}
	return r.Bytes, m.Sequence, nil
}

// bucketStream returns the bucket's stream, looked up once.
func (s *Store) bucketStream(ctx context.Context) (jetstream.Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.str != nil {
		return s.str, nil
	}
	str, err := s.js.Stream(ctx, BucketStream)
	if err != nil {
		return nil, fmt.Errorf("artifact: bucket %s: %w", Bucket, err)
	}
	s.str = str
	return str, nil
}

func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
