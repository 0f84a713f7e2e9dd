package web

import (
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// File diffs of edit steps. A file.patch step's change is its unified
// diff; a file.write step's is the file it writes, every line added (the
// ledger keeps content hashes of the before-image, not the content, so
// the page cannot show what a write replaced). Each line is drawn with a
// class by its kind; the text goes through html/template's escaping as
// every model-written text does.

// maxDiffLines bounds the lines of one drawn diff.
const maxDiffLines = 2000

// diffLine is one drawn line of a diff.
type diffLine struct{ Class, Text string }

// diffView is a drawn diff: its lines, and how many more were left out.
type diffView struct {
	Lines []diffLine
	More  int
}

// diffOf is the diff an edit step makes (nil for a step that edits no
// file).
func diffOf(st *event.Step) *diffView {
	if st == nil {
		return nil
	}
	switch st.Kind {
	case event.KindFilePatch:
		return drawDiff(strings.Split(strings.TrimSuffix(st.Patch, "\n"), "\n"))
	case event.KindFileWrite:
		lines := []string{"+++ " + st.Path}
		if st.Content != "" {
			for _, l := range strings.Split(strings.TrimSuffix(st.Content, "\n"), "\n") {
				lines = append(lines, "+"+l)
			}
		}
		return drawDiff(lines)
	}
	return nil
}

func drawDiff(lines []string) *diffView {
	v := &diffView{}
	if len(lines) > maxDiffLines {
		v.More = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	for _, l := range lines {
		v.Lines = append(v.Lines, diffLine{Class: diffClass(l), Text: l})
	}
	return v
}

// diffClass is the class of a unified diff's line.
func diffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "):
		return "diff-file"
	case strings.HasPrefix(l, "@@"):
		return "diff-hunk"
	case strings.HasPrefix(l, "+"):
		return "diff-add"
	case strings.HasPrefix(l, "-"):
		return "diff-del"
	}
	return "diff-ctx"
}

// editWord says what an attempt did to a file: created, deleted or
// changed (with the content hashes).
func editWord(e event.FileEdit) string {
	short := func(h string) string {
		h = strings.TrimPrefix(h, "sha256:")
		if len(h) > 12 {
			h = h[:12]
		}
		return h
	}
	switch {
	case e.Before == event.FileAbsent:
		return "created (" + short(e.After) + ")"
	case e.After == event.FileAbsent:
		return "deleted (was " + short(e.Before) + ")"
	}
	return "changed " + short(e.Before) + " → " + short(e.After)
}
