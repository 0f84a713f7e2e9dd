// Package logrec is a test kit: a slog.Handler that keeps every record
// logged through it, so that a test can assert what a component said (an
// error logged once, a warning naming a signer). It imports nothing of
// agentic, so any package's tests may use it.
package logrec

import (
	"context"
	"log/slog"
	"sync"
)

// Record is one logged line: level, message, and attributes as text
// (those of the record and of Logger.With, groups flattened).
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// Recorder keeps every record logged through it, at any level. The zero
// value is ready; use it as a slog.Handler (slog.New(rec)).
type Recorder struct {
	mu   sync.Mutex
	recs []Record
}

var _ slog.Handler = (*Recorder)(nil)

// Enabled is true at every level.
func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps rec.
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.keep(rec, nil)
	return nil
}

// WithAttrs returns a handler that keeps its records here, with attrs.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &bound{r: r, attrs: attrs}
}

// WithGroup returns r: groups are flattened.
func (r *Recorder) WithGroup(string) slog.Handler { return r }

func (r *Recorder) keep(rec slog.Record, with []slog.Attr) {
	kept := Record{Level: rec.Level, Message: rec.Message, Attrs: map[string]string{}}
	for _, a := range with {
		kept.Attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		kept.Attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, kept)
	r.mu.Unlock()
}

// Records returns every record so far, in order (a copy).
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// Find returns the records whose message is msg.
func (r *Recorder) Find(msg string) []Record {
	return r.Filter(func(rec Record) bool { return rec.Message == msg })
}

// Filter returns the records keep accepts.
func (r *Recorder) Filter(keep func(Record) bool) []Record {
	var out []Record
	for _, rec := range r.Records() {
		if keep(rec) {
			out = append(out, rec)
		}
	}
	return out
}

// Count is how many records keep accepts.
func (r *Recorder) Count(keep func(Record) bool) int { return len(r.Filter(keep)) }

// Messages returns the messages of the records at level min or above.
func (r *Recorder) Messages(min slog.Level) []string {
	var out []string
	for _, rec := range r.Records() {
		if rec.Level >= min {
			out = append(out, rec.Message)
		}
	}
	return out
}

// bound is the handler of a Logger.With: its records go to r with attrs.
type bound struct {
	r     *Recorder
	attrs []slog.Attr
}

func (b *bound) Enabled(context.Context, slog.Level) bool { return true }

func (b *bound) Handle(_ context.Context, rec slog.Record) error {
	b.r.keep(rec, b.attrs)
	return nil
}

func (b *bound) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &bound{r: b.r, attrs: append(append([]slog.Attr(nil), b.attrs...), attrs...)}
}

func (b *bound) WithGroup(string) slog.Handler { return b }
