package policy

import (
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzJudge feeds generated shell to the judge: it never panics, and no
// command whose program name the shell only knows at run time — nor one
// the shell cannot parse — is ever allowed. The oracle reads the syntax
// tree itself rather than trusting the judge's own parse. `go test` runs
// the seeds; `go test -fuzz FuzzJudge ./roles/policy` explores.
func FuzzJudge(f *testing.F) {
	for _, b := range slices.Concat(bypassBoth, bypassDefault, destroySpellings, unseenCases) {
		f.Add(b.cmd)
	}
	for _, s := range []string{"", "ls", "echo $HOME", "[ -f x ] && echo y", "a=b", "> f", "$(", "'", "\"$(\"", "{a,b}{c,d}{e,f}",
		"cat <<EOF\n$(rm -rf /)\nEOF", "x() { $1; }; x rm", "${!x}", "$((1+2))", "coproc rm -rf /", "echo {1..100000}",
		"sh -c \"$(printf 'rm -rf /')\"", "a|b||c&&d;e&", "exec {fd}>/etc/passwd", "\\\n", "$'\\x00'rm"} {
		f.Add(s)
	}
	compact := mustParse(f, compactPolicy)
	def := Default()
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 4096 {
			return
		}
		for _, p := range []*Policy{compact, def} {
			v := p.Judge(cmd)
			if v.Policy.Hash != p.Hash() {
				t.Fatalf("%q: verdict without the policy hash", cmd)
			}
			if v.Action == Allow && v.Unresolved {
				t.Fatalf("%q: allowed although unresolved: %s", cmd, v.Why)
			}
			if v.Action != Allow {
				continue
			}
			file, err := parser.Parse(strings.NewReader(cmd), "")
			if err != nil {
				t.Fatalf("%q: allowed although the shell cannot parse it (%v): %s", cmd, err, v.Why)
			}
			syntax.Walk(file, func(n syntax.Node) bool {
				ce, ok := n.(*syntax.CallExpr)
				if !ok || len(ce.Args) == 0 {
					return true
				}
				if dynamicWord(firstField(ce.Args[0])) {
					t.Fatalf("%q: allowed although the program name %q is known only at run time: %s", cmd, wordText(cmd, ce.Args[0]), v.Why)
				}
				return true
			})
		}
	})
}

// firstField is the word the shell runs as the program: the first field
// of the word's brace expansion ({,*0}x runs x).
func firstField(w *syntax.Word) *syntax.Word {
	c := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	for i, p := range c.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			cp := *l
			c.Parts[i] = &cp
		}
	}
	if !syntax.SplitBraces(c) {
		return w
	}
	for f, err := range expand.BracesSeq(nil, c) {
		if err != nil {
			return w
		}
		return f
	}
	return w
}

// dynamicWord: a part of the word exists only at run time, or an
// unquoted pattern may expand it.
func dynamicWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
			return true
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, lit := q.(*syntax.Lit); !lit {
					return true
				}
			}
		case *syntax.Lit:
			for i := 0; i < len(x.Value); i++ {
				switch x.Value[i] {
				case '\\':
					i++ // an escaped character is literal
				case '*', '?':
					return true
				}
			}
		}
	}
	return false
}

func wordText(src string, w *syntax.Word) string {
	s, e := int(w.Pos().Offset()), int(w.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}
