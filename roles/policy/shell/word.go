package shell

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxFields bounds what one word may brace-expand into; a word that would
// expand further is not resolved.
const maxFields = 64

// Word is one argument of a simple command after the static expansions a
// shell does without running anything: quote removal, backslash escapes,
// ANSI-C strings ($'…') and brace expansion.
type Word struct {
	// Text is the word as written.
	Text string `json:"text"`
	// Value is the word after static expansion. Parts that only exist at
	// run time (variables, substitutions) keep their written text.
	Value string `json:"value"`
	// Static is true when Value is exactly what the shell will pass.
	Static bool `json:"static"`
	// Glob is true when an unquoted pattern character (*, ?, [) may make
	// the shell replace the word by file names.
	Glob bool `json:"glob,omitempty"`
	// Dynamic names the first part known only at run time ("$X",
	// "$(…)"), empty when Static.
	Dynamic string `json:"dynamic,omitempty"`
	// Span locates the word in the judged command.
	Span Span `json:"span"`
	// subst marks a process substitution: the word is a /dev/fd path to
	// another command's output.
	subst bool
}

// Resolved reports whether the shell will pass Value as one argument no
// matter the environment or the file system.
func (w Word) Resolved() bool { return w.Static && !w.Glob }

// words evaluates the words of a simple command, expanding braces.
func (f *frame) words(ws []*syntax.Word) ([]Word, string) {
	out := make([]Word, 0, len(ws))
	for _, sw := range ws {
		expanded, why := f.expandWord(sw)
		if why != "" {
			return nil, why
		}
		out = append(out, expanded...)
	}
	return out, ""
}

// expandWord evaluates one word into one or more fields.
func (f *frame) expandWord(sw *syntax.Word) ([]Word, string) {
	text := f.text(sw)
	span := f.span(sw)
	if hasBraceCandidate(sw) {
		cp := copyWord(sw)
		if syntax.SplitBraces(cp) {
			var out []Word
			for bw, err := range expand.BracesSeq(nil, cp) {
				if err != nil || len(out) >= maxFields {
					return nil, "brace expansion of " + text + " is too large to judge"
				}
				w := f.evalWord(bw)
				w.Text, w.Span = text, span
				out = append(out, w)
			}
			return out, ""
		}
	}
	w := f.evalWord(sw)
	w.Text, w.Span = text, span
	return []Word{w}, ""
}

// hasBraceCandidate is a cheap test before copying a word for brace
// expansion: an unquoted literal part holding both '{' and ',' or "..".
func hasBraceCandidate(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") && strings.Contains(l.Value, "}") {
			return true
		}
	}
	return false
}

// copyWord copies a word's part list so SplitBraces does not change the
// tree other passes read.
func copyWord(w *syntax.Word) *syntax.Word {
	parts := make([]syntax.WordPart, len(w.Parts))
	for i, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			c := *l
			p = &c
		}
		parts[i] = p
	}
	return &syntax.Word{Parts: parts}
}

// evalWord evaluates a word without brace expansion.
func (f *frame) evalWord(sw *syntax.Word) Word {
	var b strings.Builder
	w := Word{Static: true}
	dyn := func(p syntax.Node) {
		if w.Static {
			w.Dynamic = f.text(p)
		}
		w.Static = false
		b.WriteString(f.text(p))
	}
	for _, p := range sw.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			// A tilde prefix (~/x) is kept as written, so globs such as
			// ~/.ssh/** can name a home directory.
			if unquotedGlob(v) {
				w.Glob = true
			}
			b.WriteString(unescapeUnquoted(v))
		case *syntax.SglQuoted:
			if x.Dollar {
				s, _, err := expand.Format(nil, strings.ReplaceAll(x.Value, "%", "%%"), nil)
				if err != nil {
					dyn(x)
					continue
				}
				s, _, _ = strings.Cut(s, "\x00")
				b.WriteString(s)
				continue
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, dp := range x.Parts {
				if l, ok := dp.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
					continue
				}
				dyn(dp)
			}
		case *syntax.BraceExp:
			// Left after expansion only when SplitBraces was not applied.
			dyn(x)
		case *syntax.ProcSubst:
			w.subst = true
			dyn(x)
		case *syntax.ExtGlob:
			w.Glob = true
			b.WriteString(f.text(x))
		default:
			// ParamExp, CmdSubst, ArithmExp: known only at run time.
			dyn(p)
		}
	}
	w.Value = b.String()
	return w
}

// unquotedGlob reports an unescaped *, ? or a [ closed by a later ] in
// an unquoted literal (a lone [, the test command, is no pattern).
func unquotedGlob(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.IndexByte(v[i+1:], ']') >= 0 {
				return true
			}
		}
	}
	return false
}

// unescapeUnquoted removes the backslashes of an unquoted literal: \x is x
// and a backslash-newline disappears.
func unescapeUnquoted(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that are special inside double
// quotes: before $, `, ", \ and newline.
func unescapeDouble(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
