package localstate

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Attempt states.
const (
	StateStarted  = "started"
	StateFinished = "finished"
	// StateDropped is an attempt cancelled before it started: it never
	// runs (see Store.MarkDropped).
	StateDropped = "dropped"
)

// Attempt is what the executor remembers about one attempt of one step.
type Attempt struct {
	Run     string `json:"run"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// State is StateStarted, StateFinished or StateDropped.
	State string `json:"state"`
	// Started is when the attempt was started.
	Started time.Time `json:"started"`
	// PID is the step's process (group) id, 0 if unknown.
	PID int `json:"pid,omitempty"`
	// Finished is when MarkFinished (or MarkDropped) was called; zero
	// while started.
	Finished time.Time `json:"finished,omitzero"`
}

// Key prefixes: "a/" attempt records, "u/" the unfinished index.
const (
	recordPrefix     = "a/"
	unfinishedPrefix = "u/"
)

// attemptKey is prefix + run + 0x00 + step + 0x00 + attempt (8 bytes, big
// endian), so that keys sort by run, step, attempt.
func attemptKey(prefix, run, step string, attempt int) []byte {
	k := make([]byte, 0, len(prefix)+len(run)+len(step)+10)
	k = append(k, prefix...)
	k = append(k, run...)
	k = append(k, 0)
	k = append(k, step...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(attempt))
}

// checkID validates the identifying fields of an attempt.
func checkID(run, step string, attempt int) error {
	switch {
	case run == "" || strings.IndexByte(run, 0) >= 0:
		return fmt.Errorf("%w: run %q", ErrInvalid, run)
	case step == "" || strings.IndexByte(step, 0) >= 0:
		return fmt.Errorf("%w: step %q of run %s", ErrInvalid, step, run)
	case attempt < 0:
		return fmt.Errorf("%w: attempt %d of %s/%s", ErrInvalid, attempt, run, step)
	}
	return nil
}

// upperBound is the smallest key greater than every key with prefix p.
func upperBound(p string) []byte {
	b := []byte(p)
	b[len(b)-1]++
	return b
}
