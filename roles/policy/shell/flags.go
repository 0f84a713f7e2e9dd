package shell

import "strings"

// Flag is one option of a simple command, under its canonical name: the
// spelling a program's aliases map to (rm's --recursive and -R are -r;
// git push's -f is --force), so rules match any spelling.
type Flag struct {
	// Name is the canonical name ("-r", "--force").
	Name string `json:"name"`
	// Text is the word the flag was written in ("-rf", "--recursive").
	Text string `json:"text"`
	// Span locates Text in the judged command.
	Span Span `json:"span"`
}

// spec is what the judge knows of a program's options. The zero spec is
// the generic reading: every letter of a short cluster is a flag, no
// option takes a value, and options may follow operands.
type spec struct {
	// short lists the short flags that take no value; when empty, any
	// letter is one.
	short string
	// shortVal lists the short flags whose value is attached or the next
	// word.
	shortVal string
	// longVal lists long flags (with their dashes) whose value is the next
	// word unless written with "=".
	longVal []string
	// alias maps a spelling to its canonical name.
	alias map[string]string
	// strict makes a dash word with a letter outside short and shortVal an
	// operand (chmod -x is a mode, not a flag).
	strict bool
	// whole keeps single-dash words whole (find -delete, dd has none).
	whole bool
	// sub makes the first operand a subcommand; subs holds the options of
	// the subcommands that have their own.
	sub  bool
	subs map[string]*spec
	// posix stops option parsing at the first operand (wrappers: the
	// program they run starts there).
	posix bool
}

func (s *spec) canon(name string) string {
	if c, ok := s.alias[name]; ok {
		return c
	}
	return name
}

func (s *spec) takesLong(name string) bool {
	for _, v := range s.longVal {
		if v == name {
			return true
		}
	}
	return false
}

// parsed is the option reading of a command's arguments.
type parsed struct {
	flags      []Flag
	operands   []Word
	subcommand string
	// dynamic: an argument that may be an option could not be resolved.
	dynamic bool
	// values maps a flag's canonical name to the values given to it.
	values map[string][]Word
}

func (p *parsed) value(names ...string) (Word, bool) {
	for _, n := range names {
		if v := p.values[n]; len(v) > 0 {
			return v[len(v)-1], true
		}
	}
	return Word{}, false
}

func (p *parsed) has(names ...string) bool {
	for _, f := range p.flags {
		for _, n := range names {
			if f.Name == n {
				return true
			}
		}
	}
	return false
}

// parseArgs reads args (the words after the program) with the program's
// spec.
func parseArgs(sp *spec, args []Word) parsed {
	var p parsed
	if sp == nil {
		sp = &spec{}
	}
	optsDone := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			if !optsDone {
				p.dynamic = true
			}
			p.operands = append(p.operands, w)
			continue
		}
		v := w.Value
		if optsDone || len(v) < 2 || v[0] != '-' {
			if sp.sub && p.subcommand == "" && !optsDone {
				p.subcommand = v
				if s, ok := sp.subs[v]; ok {
					sp = s
				}
				continue
			}
			p.operands = append(p.operands, w)
			if sp.posix {
				optsDone = true
			}
			continue
		}
		if v == "--" {
			optsDone = true
			continue
		}
		next, ok := p.option(sp, args, i)
		if !ok {
			p.operands = append(p.operands, w)
			continue
		}
		i = next
	}
	return p
}

// splitOpts reads the options of a program that runs another and returns
// the words from where that command starts.
func splitOpts(sp *spec, args []Word) (parsed, []Word) {
	var p parsed
	if sp == nil {
		sp = &spec{}
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			return p, args[i:]
		}
		v := w.Value
		if v == "--" {
			return p, args[i+1:]
		}
		if len(v) < 2 || v[0] != '-' {
			return p, args[i:]
		}
		next, ok := p.option(sp, args, i)
		if !ok {
			return p, args[i:]
		}
		i = next
	}
	return p, nil
}

func (p *parsed) setValue(name string, w Word) {
	if p.values == nil {
		p.values = map[string][]Word{}
	}
	p.values[name] = append(p.values[name], w)
}

// option reads the option word args[i] (static, starting with a dash, not
// "--") and returns the index of the last word it used; ok is false when
// the word is an operand after all (chmod -x).
func (p *parsed) option(sp *spec, args []Word, i int) (int, bool) {
	w := args[i]
	v := w.Value
	if strings.HasPrefix(v, "--") {
		name, val, eq := strings.Cut(v, "=")
		c := sp.canon(name)
		p.flags = append(p.flags, Flag{Name: c, Text: v, Span: w.Span})
		switch {
		case eq:
			p.setValue(c, Word{Text: v, Value: val, Static: true, Span: w.Span})
		case sp.takesLong(name) && i+1 < len(args):
			i++
			p.setValue(c, args[i])
		}
		return i, true
	}
	if sp.whole || isNumber(v[1:]) {
		c := sp.canon(v)
		p.flags = append(p.flags, Flag{Name: c, Text: v, Span: w.Span})
		if sp.takesLong(v) && i+1 < len(args) {
			i++
			p.setValue(c, args[i])
		}
		return i, true
	}
	body := v[1:]
	if sp.strict && !allIn(body, sp.short+sp.shortVal) {
		return i, false
	}
	for j := 0; j < len(body); j++ {
		c := sp.canon("-" + body[j:j+1])
		p.flags = append(p.flags, Flag{Name: c, Text: v, Span: w.Span})
		if strings.IndexByte(sp.shortVal, body[j]) >= 0 {
			switch {
			case j+1 < len(body):
				p.setValue(c, Word{Text: v, Value: body[j+1:], Static: true, Span: w.Span})
			case i+1 < len(args):
				i++
				p.setValue(c, args[i])
			}
			return i, true
		}
	}
	return i, true
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// NormalizeFlags gives the canonical names of flags written for program
// (and its subcommand, if any), as a rule writes them:
// NormalizeFlags("rm", "", "-rf") is [-r -f], NormalizeFlags("rm", "",
// "--recursive") is [-r] and NormalizeFlags("git", "push", "-f") is
// [--force].
func NormalizeFlags(program, subcommand string, flags ...string) []string {
	ws := make([]Word, len(flags))
	for i, f := range flags {
		ws[i] = Word{Text: f, Value: f, Static: true}
	}
	sp := specFor(program)
	if sp != nil && subcommand != "" {
		if s, ok := sp.subs[subcommand]; ok {
			sp = s
		} else {
			c := *sp
			c.sub = false
			sp = &c
		}
	}
	if sp != nil && sp.strict {
		// A rule's flags are flags even when a mode could look like one.
		c := *sp
		c.strict = false
		sp = &c
	}
	p := parseArgs(sp, ws)
	out := make([]string, 0, len(p.flags))
	for _, f := range p.flags {
		out = append(out, f.Name)
	}
	for _, o := range p.operands {
		out = append(out, o.Value)
	}
	return out
}
