package shell

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep judging bounded: anything beyond them is reported as a
// command that cannot be judged, never dropped.
const (
	// MaxSource is the longest command parsed.
	MaxSource = 256 << 10
	// maxDepth bounds nesting of sh -c strings, eval and the like.
	maxDepth = 12
	// maxCommands bounds the simple commands of one judged command.
	maxCommands = 4096
	// maxFeed bounds the commands named as feeding a pipe.
	maxFeed = 8
)

// Span is a byte range [Start, End) in the judged command; Start is -1
// when the part has no place of its own there.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Write is a path a command writes: a redirection target or a file
// argument of a program known to change it (rm, cp, tee, dd of=…).
type Write struct {
	// Path is the target, cleaned and joined with the directory the
	// command runs in when that is known; relative paths are relative to
	// the step's working directory; a leading ~ is kept.
	Path string `json:"path"`
	// Text is the target as written.
	Text string `json:"text"`
	// Known is false when the target (or the directory it is relative to)
	// exists only at run time.
	Known bool `json:"known"`
	// Glob marks a target the shell expands against the file system.
	Glob bool `json:"glob,omitempty"`
	// How says what writes: "> redirect", "rm", "find -delete".
	How string `json:"how"`
	// Span locates Text in the judged command.
	Span Span `json:"span"`
}

// Command is one simple command a shell would run, after unwrapping the
// programs that only run another (sudo, env, xargs…), which are commands
// of their own with Runs set.
type Command struct {
	// Program is the program's base name ("rm" for /usr/bin/../bin/rm,
	// \rm and 'r''m'); empty for a statement that runs no program (a
	// redirection or assignment alone) and when the name is not static.
	Program string `json:"program"`
	// ProgramSpan locates the program's name in the judged command.
	ProgramSpan Span `json:"program_span"`
	// Subcommand is the first operand of programs that have subcommands
	// (git push, apt-get remove).
	Subcommand string `json:"subcommand,omitempty"`
	// Flags are the options under their canonical names.
	Flags []Flag `json:"flags,omitempty"`
	// Operands are the arguments that are neither options nor their
	// values.
	Operands []Word `json:"operands,omitempty"`
	// Dynamic is true when an argument that may be an option is known
	// only at run time (a variable, a substitution, arguments xargs or
	// find -exec supply).
	Dynamic bool `json:"dynamic,omitempty"`
	// Via lists, outermost first, what this command runs inside: "$( )",
	// "bash -c", "eval", "sudo", "xargs", "find -exec"…
	Via []string `json:"via,omitempty"`
	// Text is the simple command as written.
	Text string `json:"text"`
	// Span locates Text in the judged command.
	Span Span `json:"span"`
	// Writes are the paths the command writes.
	Writes []Write `json:"writes,omitempty"`
	// Env names the variables assigned for this command.
	Env []string `json:"env,omitempty"`
	// Runs marks a program that runs another command (sudo, env, xargs,
	// nice…); that command follows it in the list.
	Runs bool `json:"runs,omitempty"`
	// Opaque, when set, says why what this command does cannot be known
	// statically: a program name from a variable, a script read from a
	// pipe, inline interpreter code, a parse error.
	Opaque string `json:"opaque,omitempty"`
	// Inline marks a command that is opaque only because it runs inline
	// interpreter code, the first operand (python3 -c CODE): a rule naming
	// the program and exactly that code may allow it.
	Inline bool `json:"inline,omitempty"`
	// OpaqueSpan locates the part that cannot be judged.
	OpaqueSpan Span `json:"opaque_span,omitzero"`
	// Stdin names the commands feeding this one through a pipe.
	Stdin []string `json:"stdin,omitempty"`
	// Effects say what the command does to data, whatever its spelling:
	// a recursive delete (rm -r, find -delete, rsync --delete…) or a
	// wipe (truncation, dd of=, mv to /dev/null, chmod -R 000).
	Effects []Effect `json:"effects,omitempty"`

	// values are the values given to options, in argument order.
	values []flagValue
}

type flagValue struct {
	name string
	w    Word
}

func sortValues(vs []flagValue) {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].w.Span.Start < vs[j].w.Span.Start })
}

func (c *Command) hasFlag(names ...string) bool {
	for _, f := range c.Flags {
		for _, n := range names {
			if f.Name == n {
				return true
			}
		}
	}
	return false
}

// Display is the command as a reader should see it: the text, and what it
// runs inside when it is nested.
func (c *Command) Display() string {
	if len(c.Via) == 0 {
		return c.Text
	}
	return c.Text + " (inside " + strings.Join(c.Via, ", ") + ")"
}

// Parse parses src as a POSIX/bash shell program and returns every simple
// command it would run, in source order: the commands of pipes, lists,
// subshells, brace groups, functions, loops, substitutions $(…), `…`,
// <(…), of sh -c strings and eval arguments parsed recursively, and of
// programs run by wrappers. It never fails: what cannot be parsed or
// resolved comes back as a Command with Opaque set.
func Parse(src string) []Command {
	w := &walker{}
	f := &frame{w: w, src: src, cwd: "."}
	if len(src) > MaxSource {
		w.opaque(f, fmt.Sprintf("the command is %d bytes, more than the %d a judge parses", len(src), MaxSource), Span{0, len(src)})
		return w.cmds
	}
	f.script()
	return w.cmds
}

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// walker collects commands across nested frames.
type walker struct {
	cmds []Command
	full bool
	// written holds the paths (and, under a NUL prefix, the base names)
	// earlier commands wrote.
	written map[string]bool
}

func (w *walker) add(c Command) {
	if w.full {
		return
	}
	if len(w.cmds) >= maxCommands {
		w.full = true
		c = Command{Text: c.Text, Span: c.Span, Opaque: fmt.Sprintf("more than %d commands: the rest is not judged", maxCommands)}
	}
	for _, wr := range c.Writes {
		if wr.Known {
			if w.written == nil {
				w.written = map[string]bool{}
			}
			w.written[wr.Path] = true
			w.written["\x00"+path.Base(wr.Path)] = true
		}
	}
	w.cmds = append(w.cmds, c)
}

// wrote reports whether an earlier part of the command wrote the program
// about to run: by its path, or by its base name when it is run by name
// (PATH, an alias or a link could find it).
func (w *walker) wrote(f *frame, prog string) bool {
	if len(w.written) == 0 {
		return false
	}
	if !strings.Contains(prog, "/") {
		return w.written["\x00"+prog]
	}
	p := prog
	switch {
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "~"):
		p = path.Clean(p)
	case f.cwd == "":
		return w.written["\x00"+path.Base(p)]
	default:
		p = path.Join(f.cwd, p)
	}
	return w.written[p]
}

func (w *walker) opaque(f *frame, why string, sp Span) {
	w.add(Command{Text: f.src, Span: f.whole(), Via: f.viaCopy(), Opaque: why, OpaqueSpan: sp})
}

// frame is one script being walked: the top-level command or a nested
// string (sh -c, eval…).
type frame struct {
	w   *walker
	src string
	// base is the offset of src in the judged command, -1 when src is
	// not a verbatim part of it (then outer locates what it came from).
	base  int
	outer Span
	via   []string
	// cwd is the directory commands run in: "." for the step's working
	// directory, "" when unknown.
	cwd   string
	depth int
	// calls counts the simple commands walked, checked against the tree.
	calls int
}

// ctx is where a statement sits.
type ctx struct {
	// cond: the statement may or may not run (after && or ||, in a loop,
	// a branch, a function body).
	cond bool
	// feed lists the commands piped into the statement.
	feed []int
}

func (f *frame) whole() Span {
	if f.base >= 0 {
		return Span{f.base, f.base + len(f.src)}
	}
	return f.outer
}

func (f *frame) viaCopy() []string {
	if len(f.via) == 0 {
		return nil
	}
	return append([]string(nil), f.via...)
}

func (f *frame) offsets(n syntax.Node) (int, int) {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || s > len(f.src) {
		s = len(f.src)
	}
	if e < s || e > len(f.src) {
		e = len(f.src)
	}
	return s, e
}

func (f *frame) text(n syntax.Node) string {
	s, e := f.offsets(n)
	return f.src[s:e]
}

func (f *frame) span(n syntax.Node) Span {
	if f.base < 0 {
		return f.outer
	}
	s, e := f.offsets(n)
	return Span{f.base + s, f.base + e}
}

// script parses and walks the frame's source.
func (f *frame) script() {
	if f.depth > maxDepth {
		f.w.opaque(f, fmt.Sprintf("shell code nested more than %d levels deep", maxDepth), f.whole())
		return
	}
	p := parsers.Get().(*syntax.Parser)
	file, err := p.Parse(strings.NewReader(f.src), "")
	parsers.Put(p)
	if err != nil {
		f.w.opaque(f, "the shell cannot be parsed: "+err.Error(), f.whole())
		return
	}
	f.stmts(file.Stmts, ctx{})
	// Every simple command in the tree must have been judged; if a
	// construct was missed, say so rather than let it pass.
	total := 0
	syntax.Walk(file, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.CallExpr); ok {
			total++
		}
		return true
	})
	if total != f.calls && !f.w.full {
		f.w.opaque(f, fmt.Sprintf("%d of %d simple commands were not reached by the judge", total-f.calls, total), f.whole())
	}
}

// nested walks code found inside a word (sh -c, eval, ssh…) as a script
// of its own. from is the word it came from when it is a single word.
func (f *frame) nested(code string, from []Word, via string, shareCwd bool) {
	n := &frame{w: f.w, src: code, base: -1, via: append(f.viaCopy(), via), cwd: f.cwd, depth: f.depth + 1}
	if len(from) > 0 {
		n.outer = Span{from[0].Span.Start, from[len(from)-1].Span.End}
		if len(from) == 1 && f.base >= 0 {
			if off, ok := verbatim(from[0], code); ok {
				n.base = from[0].Span.Start + off
			}
		}
	} else {
		n.outer = f.whole()
	}
	n.script()
	if shareCwd {
		f.cwd = n.cwd
	}
}

// verbatim reports where code starts inside the written word when the
// word holds it byte for byte ('code', "code" or code).
func verbatim(w Word, code string) (int, bool) {
	if w.Span.Start < 0 {
		return 0, false
	}
	switch w.Text {
	case code:
		return 0, true
	case "'" + code + "'", "\"" + code + "\"":
		if strings.ContainsAny(code, "\\$`") && w.Text[0] == '"' {
			return 0, false
		}
		return 1, true
	}
	return 0, false
}

func (f *frame) stmts(list []*syntax.Stmt, c ctx) {
	for _, s := range list {
		f.stmt(s, c)
	}
}

func (f *frame) stmt(s *syntax.Stmt, c ctx) {
	if f.w.full {
		return
	}
	for _, r := range s.Redirs {
		f.node(r, c)
	}
	if s.Background || s.Coprocess {
		// A background job runs in a subshell: its cd changes nothing here.
		cwd := f.cwd
		defer func() { f.cwd = cwd }()
	}
	c.cond = c.cond || s.Negated
	switch x := s.Cmd.(type) {
	case *syntax.CallExpr:
		f.call(s, x, c)
		return
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.Pipe, syntax.PipeAll:
			// Each side of a pipe runs in a subshell.
			cwd := f.cwd
			start := len(f.w.cmds)
			f.stmt(x.X, ctx{cond: c.cond, feed: c.feed})
			// The commands that write into the pipe: the left side's, the
			// last few of a long pipeline.
			feed := make([]int, 0, min(len(f.w.cmds)-start, maxFeed))
			for i := max(start, len(f.w.cmds)-maxFeed); i < len(f.w.cmds); i++ {
				feed = append(feed, i)
			}
			f.cwd = cwd
			f.stmt(x.Y, ctx{cond: c.cond, feed: feed})
			f.cwd = cwd
		case syntax.AndStmt:
			f.stmt(x.X, c)
			f.stmt(x.Y, ctx{cond: true})
		default:
			f.stmt(x.X, ctx{cond: true})
			f.stmt(x.Y, ctx{cond: true})
		}
	case *syntax.Subshell:
		cwd := f.cwd
		f.stmts(x.Stmts, c)
		f.cwd = cwd
	case *syntax.Block:
		f.stmts(x.Stmts, c)
	case *syntax.DeclClause:
		f.node(x, c)
		for _, a := range x.Args {
			if a.Value != nil {
				f.textCode(a.Value)
			}
		}
		var env []string
		why := ""
		for _, a := range x.Args {
			if a.Name != nil {
				env = append(env, a.Name.Value)
				if EnvCode(a.Name.Value) && why == "" {
					why = "sets " + a.Name.Value + ", which makes programs load or run code the command does not show"
				}
			} else if a.Naked && a.Value != nil {
				v := f.evalWord(a.Value)
				if !v.Static && why == "" {
					why = x.Variant.Value + " of " + f.text(a.Value) + ", a name known only at run time"
				}
				if n, _, ok := strings.Cut(v.Value, "="); ok && EnvCode(n) && why == "" {
					why = "sets " + n + ", which makes programs load or run code the command does not show"
				}
			}
		}
		cmd := Command{Program: x.Variant.Value, Text: f.text(s), Span: f.span(s), Via: f.viaCopy(), Env: env, Writes: f.redirWrites(s.Redirs)}
		if why != "" {
			cmd.Opaque, cmd.OpaqueSpan = why, cmd.Span
		}
		f.w.add(cmd)
		return
	case nil:
		// Redirections alone (> f): written below.
	default:
		// Loops, branches, case, functions, tests, arithmetic: every
		// statement inside may or may not run.
		f.node(x, ctx{cond: true})
	}
	if ws := f.redirWrites(s.Redirs); len(ws) > 0 {
		cmd := Command{Text: f.redirText(s), Span: f.span(s), Via: f.viaCopy(), Writes: ws}
		if s.Cmd == nil {
			f.effects(&cmd) // > f alone empties f
		}
		f.w.add(cmd)
	}
}

func (f *frame) redirText(s *syntax.Stmt) string {
	parts := make([]string, 0, len(s.Redirs))
	for _, r := range s.Redirs {
		parts = append(parts, f.text(r))
	}
	return strings.Join(parts, " ")
}

// node walks any other syntax node for the statements and substitutions
// inside it.
func (f *frame) node(n syntax.Node, c ctx) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			f.stmt(x, ctx{cond: true})
			return false
		case *syntax.CmdSubst:
			via := "$( )"
			if x.Backquotes {
				via = "` `"
			}
			f.sub(x.Stmts, via)
			return false
		case *syntax.ProcSubst:
			via := "<( )"
			if x.Op == syntax.CmdOut {
				via = ">( )"
			}
			f.sub(x.Stmts, via)
			return false
		}
		return true
	})
}

// sub walks a substitution, which runs in a subshell.
func (f *frame) sub(list []*syntax.Stmt, via string) {
	cwd, saved := f.cwd, f.via
	f.via = append(f.viaCopy(), via)
	f.stmts(list, ctx{})
	f.cwd, f.via = cwd, saved
}

var writeOps = map[syntax.RedirOperator]string{
	syntax.RdrOut: ">", syntax.AppOut: ">>", syntax.RdrInOut: "<>", syntax.RdrClob: ">|",
	syntax.AppClob: ">>|", syntax.RdrAll: "&>", syntax.RdrAllClob: "&>|", syntax.AppAll: "&>>",
	syntax.AppAllClob: "&>>|", syntax.DplOut: ">&",
}

func (f *frame) redirWrites(rs []*syntax.Redirect) []Write {
	var out []Write
	for _, r := range rs {
		op, ok := writeOps[r.Op]
		if !ok || r.Word == nil {
			continue
		}
		w := f.evalWord(r.Word)
		w.Text, w.Span = f.text(r.Word), f.span(r.Word)
		if r.Op == syntax.DplOut && w.Static && (w.Value == "-" || isNumber(strings.TrimSuffix(w.Value, "-"))) {
			continue // >&2, >&-: a file descriptor, not a file
		}
		out = append(out, f.write(w, op+" redirect"))
	}
	return out
}

// write resolves a written target against the current directory.
func (f *frame) write(w Word, how string) Write {
	out := Write{Text: w.Text, Path: w.Value, Known: w.Static, Glob: w.Glob, How: how, Span: w.Span}
	if !w.Static {
		return out
	}
	p := w.Value
	switch {
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "~"):
		out.Path = path.Clean(p)
	case f.cwd == "":
		out.Known = false
	default:
		out.Path = path.Join(f.cwd, p)
	}
	return out
}

// call judges a simple command statement.
func (f *frame) call(s *syntax.Stmt, ce *syntax.CallExpr, c ctx) {
	f.calls++
	for _, a := range ce.Assigns {
		f.node(a, c)
	}
	for _, a := range ce.Args {
		f.node(a, c)
	}
	rc := run{writes: f.redirWrites(s.Redirs), cond: c.cond}
	rc.text, rc.span = f.stmtText(s, ce)
	for _, i := range c.feed {
		rc.feed = append(rc.feed, i)
	}
	for _, a := range ce.Assigns {
		if a.Name == nil {
			continue
		}
		rc.env = append(rc.env, a.Name.Value)
		if EnvCode(a.Name.Value) && rc.envWhy == "" {
			rc.envWhy = "sets " + a.Name.Value + ", which makes programs load or run code the command does not show"
			rc.envSpan = f.span(a)
		}
	}
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				rc.stdin, rc.stdinOK = f.heredoc(r.Hdoc)
				rc.stdinFrom = []Word{{Text: f.text(r.Hdoc), Span: f.span(r.Hdoc)}}
			} else {
				rc.stdin, rc.stdinOK = "", true
			}
			rc.stdinSet = true
		case syntax.WordHdoc:
			w := f.evalWord(r.Word)
			w.Text, w.Span = f.text(r.Word), f.span(r.Word)
			rc.stdin, rc.stdinOK, rc.stdinSet = w.Value+"\n", w.Static, true
			rc.stdinFrom = []Word{w}
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			rc.stdinSet, rc.stdinOK, rc.stdinFile = true, false, f.text(r.Word)
		}
	}
	for _, a := range ce.Assigns {
		if a.Value != nil {
			f.textCode(a.Value)
		}
	}
	for _, a := range ce.Args {
		f.textCode(a)
	}
	words, why := f.words(ce.Args)
	if why != "" {
		f.w.add(Command{Text: rc.text, Span: rc.span, Via: f.viaCopy(), Opaque: why, OpaqueSpan: rc.span, Writes: rc.writes})
		return
	}
	if len(words) == 0 {
		if rc.envWhy != "" || len(rc.writes) > 0 {
			cmd := Command{Text: rc.text, Span: rc.span, Via: f.viaCopy(), Env: rc.env, Writes: rc.writes}
			if rc.envWhy != "" {
				cmd.Opaque, cmd.OpaqueSpan = rc.envWhy, rc.envSpan
			}
			f.effects(&cmd)
			f.w.add(cmd)
		}
		return
	}
	f.run(words, rc)
}

// stmtText is a simple command's text: its words and redirections,
// without a trailing ; or &.
func (f *frame) stmtText(s *syntax.Stmt, ce *syntax.CallExpr) (string, Span) {
	start, end := f.offsets(s)
	_, e := f.offsets(ce)
	if len(ce.Args) == 0 && len(ce.Assigns) == 0 {
		e = start
	}
	for _, r := range s.Redirs {
		if _, re := f.offsets(r); re > e {
			e = re
		}
	}
	if e < end {
		end = e
	}
	sp := f.outer
	if f.base >= 0 {
		sp = Span{f.base + start, f.base + end}
	}
	return f.src[start:end], sp
}

// textCode judges the command substitutions inside quoted text
// ('$(rm -rf /)' stored in a variable): bash runs them when such a value
// reaches an arithmetic context, a ${x@P} or an eval, so they are judged
// as if they ran.
func (f *frame) textCode(sw *syntax.Word) {
	quoted := false
	for _, p := range sw.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted:
			quoted = quoted || strings.Contains(x.Value, "$(") || strings.Contains(x.Value, "`")
		case *syntax.Lit:
			quoted = quoted || strings.Contains(x.Value, "\\$(") || strings.Contains(x.Value, "\\`")
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok && (strings.Contains(l.Value, "\\$") || strings.Contains(l.Value, "\\`")) {
					quoted = true
				}
			}
		}
	}
	if !quoted || f.depth >= maxDepth {
		return
	}
	v := f.evalWord(sw)
	const delim = "AGENTIC_POLICY_TEXT"
	if strings.Contains(v.Value, delim) {
		return
	}
	p := parsers.Get().(*syntax.Parser)
	file, err := p.Parse(strings.NewReader(": <<"+delim+"\n"+v.Value+"\n"+delim+"\n"), "")
	parsers.Put(p)
	if err != nil || len(file.Stmts) != 1 || len(file.Stmts[0].Redirs) != 1 || file.Stmts[0].Redirs[0].Hdoc == nil {
		return // no complete substitution: nothing a shell could run
	}
	n := &frame{w: f.w, src: ": <<" + delim + "\n" + v.Value + "\n" + delim + "\n", base: -1, outer: f.span(sw),
		via: append(f.viaCopy(), "text "+f.text(sw)), cwd: f.cwd, depth: f.depth + 1}
	n.node(file.Stmts[0].Redirs[0].Hdoc, ctx{cond: true})
}

// heredoc is a here-document's body when it is static.
func (f *frame) heredoc(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(unescapeDouble(l.Value))
	}
	return b.String(), true
}

// run is what a simple command carries besides its words.
type run struct {
	text    string
	span    Span
	writes  []Write
	env     []string
	envWhy  string
	envSpan Span
	cond    bool
	feed    []int
	// stdin is a here-document or here-string body; stdinOK when static.
	stdin     string
	stdinOK   bool
	stdinSet  bool
	stdinFile string
	stdinFrom []Word
	// extra: the program receives arguments at run time (xargs);
	// extraBy says from where.
	extra   bool
	extraBy string
}

// programName is the base name a shell looks up: /usr/bin/../bin/rm and
// ./rm are rm.
func programName(v string) string {
	if !strings.Contains(v, "/") {
		return v
	}
	b := path.Base(path.Clean(v))
	if b == "/" || b == "." || b == ".." {
		return ""
	}
	return b
}
