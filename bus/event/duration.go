package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is a length of time in a payload. It travels as a Go duration
// string — "1m30s", "5m0s", "250ms": time.Duration's own String form, which
// ParseDuration reads back exactly — and is never negative. Fields of this
// type are tagged omitzero: a zero Duration is left out, and an absent one
// is zero.
//
// Builds before protocol version 1 wrote durations as a JSON number of
// nanoseconds. A number is still read, as nanoseconds: the ledger record of
// an event does not keep its protocol version, so a fold cannot tell an old
// event from a new one, and the number has one meaning. Version-1 builds
// never write it.
type Duration time.Duration

// ParseDuration reads a duration as it travels: a Go duration string
// ("90s", "1m30s", "2h45m", "1.5s"). It refuses anything else, and negative
// durations, with an error that says what it wants.
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("event: bad duration %q: want a Go duration such as \"30s\", \"1m30s\" or \"2h\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("event: bad duration %q: must not be negative", s)
	}
	return Duration(d), nil
}

// String is the duration as it travels ("1m30s"; "0s" for zero).
func (d Duration) String() string { return time.Duration(d).String() }

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// IsZero reports whether d is zero, for omitzero.
func (d Duration) IsZero() bool { return d == 0 }

// MarshalJSON writes d as a duration string. A negative duration is an
// error: no payload carries one.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d < 0 {
		return nil, fmt.Errorf("event: duration %s is negative", d)
	}
	return strconv.AppendQuote(nil, d.String()), nil
}

// UnmarshalJSON reads a duration string, or (the form written before
// protocol version 1) a whole number of nanoseconds. null leaves d as it is.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("event: bad duration %s: %w", b, err)
		}
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*d = v
		return nil
	default:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("event: bad duration %.40s: want a Go duration string such as \"1m30s\" (or, from builds before protocol version 1, whole nanoseconds)", b)
		}
		if n < 0 {
			return fmt.Errorf("event: bad duration %d (nanoseconds): must not be negative", n)
		}
		*d = Duration(n)
		return nil
	}
}
