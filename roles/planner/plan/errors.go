package plan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ErrInvalid is wrapped by every error Parse, Validate and Normalize return
// for a plan that is not acceptable: errors.Is(err, plan.ErrInvalid).
var ErrInvalid = errors.New("plan: invalid")

// Problem is one thing wrong with a plan, located as precisely as the input
// allows. File, Line and Col are empty for plans built in code.
type Problem struct {
	// File is the plan file's name, as given to Parse.
	File string `json:"file,omitempty"`
	// Line and Col are 1-based; 0 when unknown.
	Line int `json:"line,omitempty"`
	Col  int `json:"col,omitempty"`
	// Path names the offending element, e.g. "steps[2].depends_on[0]" or
	// "subgoals[1].steps[0].run"; empty for the plan as a whole.
	Path string `json:"path,omitempty"`
	// Msg says what is wrong and, where it can, what to do about it.
	Msg string `json:"msg"`
}

// String formats the problem as "file:line:col: path: msg", leaving out
// the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		if p.File != "" {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d", p.Line)
		if p.Col > 0 {
			fmt.Fprintf(&b, ":%d", p.Col)
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found in a plan (up to MaxProblems), in file
// order. It wraps ErrInvalid.
type Error struct {
	Problems []Problem
	// Omitted counts further problems that were found but not listed.
	Omitted int
}

// Error prints one problem per line.
func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Problems)+1)
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	if e.Omitted > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more problems", e.Omitted))
	}
	if len(lines) == 0 {
		return ErrInvalid.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// pos locates an element: its path always, its line and column when the
// input was a file.
type pos struct {
	path      string
	line, col int
}

// child is the position of a named sub-element: the same place in the file
// (the closest known), a longer path.
func (p pos) child(name string) pos {
	if p.path == "" {
		return pos{path: name, line: p.line, col: p.col}
	}
	return pos{path: p.path + "." + name, line: p.line, col: p.col}
}

// index is the position of the i-th element of a list, like child.
func (p pos) index(i int) pos {
	return pos{path: fmt.Sprintf("%s[%d]", p.path, i), line: p.line, col: p.col}
}

// String is "line:col" (or "" when the line is unknown), for messages that
// point back at an earlier element.
func (p pos) String() string {
	if p.line == 0 {
		return p.path
	}
	return fmt.Sprintf("line %d:%d", p.line, p.col)
}

// problems collects problems for one file.
type problems struct {
	file        string
	list        []Problem
	total       int
	suggestions int
	// patternsOnly judges secrets by redact.Latest's patterns alone, not
	// by the values of this process's environment (IsNormal).
	patternsOnly bool
}

// add records a problem at at.
func (ps *problems) add(at pos, format string, args ...any) {
	ps.total++
	if len(ps.list) >= maxCollected {
		return
	}
	ps.list = append(ps.list, Problem{File: ps.file, Line: at.line, Col: at.col, Path: at.path, Msg: fmt.Sprintf(format, args...)})
}

// any reports whether a problem was recorded.
func (ps *problems) any() bool { return ps.total > 0 }

// err returns nil, or an *Error with the problems sorted into file order
// (problems without a line keep their order, after those with one).
// Identical problems (an anchor merged into several places) are listed once.
func (ps *problems) err() error {
	if ps.total == 0 {
		return nil
	}
	list := append([]Problem(nil), ps.list...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	omitted := ps.total - len(ps.list)
	list = slices.CompactFunc(list, func(a, b Problem) bool { return a == b })
	if len(list) > MaxProblems {
		omitted += len(list) - MaxProblems
		list = list[:MaxProblems]
	}
	return &Error{Problems: list, Omitted: omitted}
}

// suggest returns ` (did you mean "x"?)` when a candidate is close to word,
// or "". It does a bounded number of searches per plan.
func (ps *problems) suggest(word string, candidates []string) string {
	if ps.suggestions >= maxSuggestions {
		return ""
	}
	ps.suggestions++
	if best := closest(word, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
