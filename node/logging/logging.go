// Package logging builds agentd's log handler: slog's JSON or text
// handler, with every key of a line once.
//
// slog's handlers write each attribute as it comes: a library's logger
// made with With("component", "bus") from a logger that already has a
// component writes "component" twice, and an adapter that logs a
// library's text as the attribute "msg" (NATS, Pebble) repeats the
// built-in "msg". JSON with a key twice is read differently by every
// parser (most keep the last, some the first, some refuse it). So the
// handler here keeps one value per key at each level of a line:
//
//  1. A key given again replaces the value given before, in the place it
//     first had: the innermost With, then the record's own attributes,
//     win (the most specific component names the line).
//  2. An attribute named like a built-in key is renamed: "msg" becomes
//     "detail", "time", "level" and "source" get the prefix "attr_".
//  3. Groups (WithGroup) nest as slog nests them, each level deduplicated
//     on its own.
//
// Usage:
//
//	log := slog.New(logging.NewHandler(os.Stderr, "json", &slog.HandlerOptions{Level: level}))
package logging

import (
	"context"
	"io"
	"log/slog"
	"slices"
)

// NewHandler is slog's JSON handler (format "json") or text handler
// (anything else) writing to w with opts, each key of a line once (see
// the package doc).
func NewHandler(w io.Writer, format string, opts *slog.HandlerOptions) slog.Handler {
	var next slog.Handler
	if format == "json" {
		next = slog.NewJSONHandler(w, opts)
	} else {
		next = slog.NewTextHandler(w, opts)
	}
	return &uniqueHandler{next: next, frames: []frame{{}}}
}

// frame is the attributes given at one group level: the top level
// (group ""), then one per WithGroup.
type frame struct {
	group string
	attrs []slog.Attr
}

// uniqueHandler holds the attributes and groups of With and WithGroup
// itself, and gives next (which has none) each record with them merged.
type uniqueHandler struct {
	next   slog.Handler
	frames []frame
}

var _ slog.Handler = (*uniqueHandler)(nil)

// Enabled is next's.
func (h *uniqueHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// WithAttrs adds attrs at the current group level.
func (h *uniqueHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	frames := slices.Clone(h.frames)
	last := &frames[len(frames)-1]
	last.attrs = append(slices.Clip(last.attrs), attrs...)
	return &uniqueHandler{next: h.next, frames: frames}
}

// WithGroup opens a group level.
func (h *uniqueHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &uniqueHandler{next: h.next, frames: append(slices.Clip(h.frames), frame{group: name})}
}

// Handle gives next the record with every attribute once.
func (h *uniqueHandler) Handle(ctx context.Context, r slog.Record) error {
	inner := slices.Clone(h.frames[len(h.frames)-1].attrs)
	r.Attrs(func(a slog.Attr) bool {
		inner = append(inner, a)
		return true
	})
	attrs := unique(inner)
	for i := len(h.frames) - 1; i > 0; i-- {
		f := h.frames[i]
		level := attrs
		attrs = unique(append(slices.Clone(h.frames[i-1].attrs), slog.Attr{Key: f.group, Value: slog.GroupValue(level...)}))
	}
	for i := range attrs {
		attrs[i] = renameBuiltin(attrs[i])
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(unique(attrs)...) // a renamed key may meet one of that name
	return h.next.Handle(ctx, out)
}

// unique keeps one attribute per key, in the place of its first, with
// the value of its last; groups given twice merge. Attributes that slog
// leaves out (empty key and value) are dropped.
func unique(attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, 0, len(attrs))
	at := make(map[string]int, len(attrs))
	for _, a := range attrs {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			continue
		}
		if a.Value.Kind() == slog.KindGroup {
			group := a.Value.Group()
			if a.Key == "" { // an inline group: its attributes are this level's
				for _, g := range group {
					out, at = put(out, at, g)
				}
				continue
			}
			if i, ok := at[a.Key]; ok && out[i].Value.Kind() == slog.KindGroup {
				merged := unique(append(slices.Clone(out[i].Value.Group()), group...))
				out[i] = slog.Attr{Key: a.Key, Value: slog.GroupValue(merged...)}
				continue
			}
			a = slog.Attr{Key: a.Key, Value: slog.GroupValue(unique(group)...)}
		}
		out, at = put(out, at, a)
	}
	return out
}

func put(out []slog.Attr, at map[string]int, a slog.Attr) ([]slog.Attr, map[string]int) {
	if i, ok := at[a.Key]; ok {
		out[i] = a
		return out, at
	}
	at[a.Key] = len(out)
	return append(out, a), at
}

// renameBuiltin renames a top-level attribute named like a key the
// handler writes itself.
func renameBuiltin(a slog.Attr) slog.Attr {
	switch a.Key {
	case slog.MessageKey:
		a.Key = "detail"
	case slog.TimeKey, slog.LevelKey, slog.SourceKey:
		a.Key = "attr_" + a.Key
	}
	return a
}
