package event

import "fmt"

// Feedback (protocol version 8): an operator rates a finished or running
// run, up or down, with an optional reason (RunRatedData). The rating is
// the feedback kind of the telemetry export (docs/telemetry.md), and what
// the self-improvement loop's negative-feedback pattern reads.
const (
	// RunRated is an operator's rating of a run (RunRatedData): the
	// event's Run names the run, its signer is the operator who rated.
	RunRated Type = "run.rated"
)

// Rating is an operator's judgement of a run: up or down.
type Rating string

// Ratings.
const (
	RatingUp   Rating = "up"
	RatingDown Rating = "down"
)

// ParseRating returns the Rating s names ("up" or "down"); anything else
// is an error that lists both.
func ParseRating(s string) (Rating, error) {
	switch r := Rating(s); r {
	case RatingUp, RatingDown:
		return r, nil
	}
	return "", fmt.Errorf("event: rating %q: want up or down", s)
}

// MaxRatingReason bounds the reason of a rating, in bytes.
const MaxRatingReason = 2000

// RunRatedData is the payload of run.rated.
type RunRatedData struct {
	// Rating is up or down.
	Rating Rating `json:"rating"`
	// Reason is the operator's words, if any (at most MaxRatingReason
	// bytes).
	Reason string `json:"reason,omitempty"`
	// Operator is the id of the operator who rated, as the signer's
	// credential names it: repeated in the payload so that a projection
	// of payloads alone (the telemetry export) shows it. Folds take the
	// event's signer, never this field, as the operator.
	Operator string `json:"operator"`
}

// Validate reports what is wrong with the payload: a rating that is
// neither up nor down, or a reason that is too long.
func (d RunRatedData) Validate() error {
	if _, err := ParseRating(string(d.Rating)); err != nil {
		return err
	}
	if len(d.Reason) > MaxRatingReason {
		return fmt.Errorf("event: rating reason of %d bytes: at most %d", len(d.Reason), MaxRatingReason)
	}
	return nil
}
