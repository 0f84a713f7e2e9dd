package shell

import (
	"strings"
)

// parallel judges GNU parallel: the words before ::: are the command,
// run through a shell when written as one string ('rm -r {}'), with
// arguments known only at run time; with no command it runs the lines
// it reads.
func (f *frame) parallel(cmd *Command, rest []Word, rc run) {
	for i, w := range rest {
		if w.Static && (w.Value == ":::" || w.Value == "::::" || w.Value == ":::+" || w.Value == "::::+") {
			cmd.Operands = append(cmd.Operands, rest[i:]...)
			rest = rest[:i]
			break
		}
	}
	if len(rest) == 0 {
		if cmd.Opaque == "" {
			cmd.Opaque, cmd.OpaqueSpan = "parallel without a command runs the command lines it reads, which the policy cannot see", cmd.Span
		}
		f.add(cmd, rc)
		return
	}
	str := false
	for _, w := range rest {
		if !w.Static || strings.ContainsAny(w.Value, " \t\n;|&<>$`(){}") {
			str = true
		}
	}
	if !str {
		saved := f.via
		f.add(cmd, rc)
		f.via = append(f.viaCopy(), "parallel")
		f.run(rest, run{feed: rc.feed, cond: rc.cond, text: rc.text, span: rc.span, extra: true, extraBy: "arguments parallel supplies"})
		f.via = saved
		return
	}
	if cmd.Opaque == "" {
		cmd.Opaque, cmd.OpaqueSpan = "parallel runs its command through a shell with arguments known only at run time", Span{rest[0].Span.Start, rest[len(rest)-1].Span.End}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	ws := make([]Word, len(rest))
	for i, w := range rest {
		w.Value = placeholders.Replace(w.Value)
		ws[i] = w
	}
	f.code(owner, ws, "parallel", false)
}

var placeholders = strings.NewReplacer("{}", "ARG", "{.}", "ARG", "{/}", "ARG", "{//}", "ARG", "{/.}", "ARG", "{#}", "1", "{%}", "1")

// sed judges sed's scripts: the e command runs shell code (parsed as sh
// -c when it is written out, unseen when it runs the pattern space, as
// s///e does), w writes a file, and a script read from a file (-f)
// cannot be judged. --sandbox turns all of these off.
func (f *frame) sed(cmd *Command, rc run) {
	if cmd.hasFlag("--sandbox") {
		f.add(cmd, rc)
		return
	}
	var scripts []Word
	for _, v := range cmd.values {
		switch v.name {
		case "-e":
			scripts = append(scripts, v.w)
		case "-f":
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "sed -f "+v.w.Text+" runs a script the policy cannot read (sed's e command runs shell commands)", v.w.Span
			}
		}
	}
	if _, ok := cmd.value("-e", "-f"); !ok && len(cmd.Operands) > 0 {
		scripts = append(scripts, cmd.Operands[0])
	}
	var code []Word
	for _, w := range scripts {
		if !w.Static {
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "the sed script is known only at run time ("+w.Text+")", w.Span
			}
			continue
		}
		r := readSed(w.Value)
		for _, t := range r.writes {
			cmd.Writes = append(cmd.Writes, f.write(Word{Text: w.Text, Value: t, Static: true, Span: w.Span}, "sed w"))
		}
		if r.unseen != "" && cmd.Opaque == "" {
			cmd.Opaque, cmd.OpaqueSpan = "sed "+w.Text+": "+r.unseen, w.Span
		}
		for _, c := range r.code {
			code = append(code, Word{Text: w.Text, Value: c, Static: true, Span: w.Span})
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	for _, c := range code {
		f.code(owner, []Word{c}, "sed e", false)
	}
}

// sedRead is what a sed script does besides editing text.
type sedRead struct {
	code   []string // shell commands of e COMMAND
	writes []string // files of w, W and s///w
	unseen string   // why part of it cannot be judged
}

// readSed reads a GNU sed script for the commands that run shell code or
// write files. A script it cannot read is reported unseen.
func readSed(s string) sedRead {
	var r sedRead
	i := 0
	n := len(s)
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = n - i
		}
		v := s[i : i+j]
		i += j
		return v
	}
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// delimited reads up to an unescaped delim; ok is false at the end.
	delimited := func(d byte) bool {
		for i < n {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < n && s[i] == '$':
			i++
		case i < n && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i < n && (s[i] == '+' || s[i] == '~'):
			i++
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		}
		return true
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		if !address() {
			r.unseen = "a sed address the policy cannot read"
			return r
		}
		skipSpace()
		if i < n && s[i] == ',' {
			i++
			skipSpace()
			if !address() {
				r.unseen = "a sed address the policy cannot read"
				return r
			}
			skipSpace()
		}
		for i < n && (s[i] == '!' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= n {
			break
		}
		c := s[i]
		i++
		switch c {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#', 'a', 'i', 'c', ':', 'r', 'R':
			// Text, a comment, a label or a file read: to the end of the line
			// (a, i, c continue over lines ending in a backslash).
			for {
				line := toEOL()
				if (c == 'a' || c == 'i' || c == 'c') && strings.HasSuffix(line, "\\") && i < n {
					i++
					continue
				}
				break
			}
		case 'b', 't', 'T', 'v':
			for i < n && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case 'l', 'L', 'q', 'Q':
			skipSpace()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case 'w', 'W':
			skipSpace()
			r.writes = append(r.writes, toEOL())
		case 'e':
			skipSpace()
			cmd := strings.TrimSpace(toEOL())
			if cmd == "" {
				r.unseen = "its e command runs the text being edited as a shell command, which the policy cannot judge"
				return r
			}
			r.code = append(r.code, cmd)
		case 's', 'y':
			if i >= n || s[i] == '\n' || s[i] == '\\' {
				r.unseen = "a sed command the policy cannot read"
				return r
			}
			d := s[i]
			i++
			if !delimited(d) || !delimited(d) {
				r.unseen = "a sed command the policy cannot read"
				return r
			}
			if c == 'y' {
				break
			}
			for i < n && strings.IndexByte("gpiImM0123456789e", s[i]) >= 0 {
				if s[i] == 'e' {
					r.unseen = "its s///e runs the text it builds as a shell command, which the policy cannot judge"
					return r
				}
				i++
			}
			if i < n && (s[i] == 'w' || s[i] == 'W') {
				i++
				skipSpace()
				r.writes = append(r.writes, toEOL())
			}
		default:
			r.unseen = "a sed command the policy cannot read (" + string(c) + ")"
			return r
		}
	}
	return r
}

// lldb judges lldb's commands: -o 'platform shell …' is shell code,
// parsed as sh -c; script, command files and other shells cannot be
// judged.
func (f *frame) lldb(cmd *Command, args []Word, rc run) {
	var code []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static || !strings.HasPrefix(w.Value, "-") {
			cmd.Operands = append(cmd.Operands, w)
			continue
		}
		name, val, eq := strings.Cut(w.Value, "=")
		cmd.Flags = append(cmd.Flags, Flag{Name: name, Text: w.Text, Span: w.Span})
		takes := false
		switch name {
		case "-o", "--one-line", "-O", "--one-line-before-file", "-k", "--one-line-on-crash",
			"-s", "--source", "-S", "--source-before-file", "-K", "--source-on-crash":
			takes = true
		case "-p", "--attach-pid", "-n", "--attach-name", "-c", "--core", "-a", "--arch", "-f", "--file", "-l", "--script-language":
			if !eq && i+1 < len(args) {
				i++
			}
			continue
		default:
			continue
		}
		v := Word{Text: w.Text, Value: val, Static: true, Span: w.Span}
		if !eq {
			if i+1 >= len(args) {
				continue
			}
			i++
			v = args[i]
		}
		if !takes {
			continue
		}
		switch {
		case !v.Static || strings.HasPrefix(name, "-s") || strings.HasPrefix(name, "-S") || strings.HasPrefix(name, "-K") || strings.HasPrefix(name, "--source"):
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "lldb "+name+" "+v.Text+" runs lldb commands the policy cannot read", v.Span
			}
		default:
			line := strings.Join(strings.Fields(v.Value), " ")
			if rest, ok := strings.CutPrefix(line, "platform shell "); ok {
				code = append(code, Word{Text: v.Text, Value: rest, Static: true, Span: v.Span})
				continue
			}
			first, _, _ := strings.Cut(line, " ")
			if first == "script" || first == "command" || first == "platform" || first == "expression" || first == "expr" ||
				first == "p" || first == "print" || first == "call" || strings.Contains(line, "shell") || strings.ContainsAny(line, "(!") {
				if cmd.Opaque == "" {
					cmd.Opaque, cmd.OpaqueSpan = "lldb "+name+" "+v.Text+" runs code or a shell the policy cannot judge", v.Span
				}
			}
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	for _, c := range code {
		f.code(owner, []Word{c}, "lldb platform shell", false)
	}
}

// npmExecCode finds the shell string of npx -c, npm exec -c and npm x
// --call.
func npmExecCode(cmd *Command, args []Word) (Word, bool) {
	if cmd.Program != "npx" && cmd.Program != "bunx" && cmd.Subcommand != "exec" && cmd.Subcommand != "x" && cmd.Subcommand != "dlx" {
		return Word{}, false
	}
	for i, w := range args {
		if !w.Static {
			continue
		}
		if (w.Value == "-c" || w.Value == "--call") && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(w.Value, "--call="); ok {
			return Word{Text: w.Text, Value: v, Static: true, Span: w.Span}, true
		}
	}
	return Word{}, false
}

// sqlShell judges database shells: sqlite3's .shell and .system, psql's
// \! and mysql's system and \! run shell commands (parsed as sh -c);
// sqlite3's .load and psql's \o | pipe run what the judge cannot read.
func (f *frame) sqlShell(cmd *Command, args []Word, rc run) {
	var texts []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static || !strings.HasPrefix(w.Value, "-") {
			if cmd.Program == "sqlite3" || cmd.Program == "sqlite" {
				texts = append(texts, w)
			}
			cmd.Operands = append(cmd.Operands, w)
			continue
		}
		name, val, eq := strings.Cut(w.Value, "=")
		cmd.Flags = append(cmd.Flags, Flag{Name: name, Text: w.Text, Span: w.Span})
		switch name {
		case "-c", "--command", "-e", "--execute", "-cmd":
			if eq {
				texts = append(texts, Word{Text: w.Text, Value: val, Static: true, Span: w.Span})
			} else if i+1 < len(args) {
				i++
				texts = append(texts, args[i])
			}
		}
	}
	var code []Word
	for _, t := range texts {
		if !t.Static {
			continue
		}
		for _, line := range strings.FieldsFunc(t.Value, func(r rune) bool { return r == '\n' || r == ';' }) {
			line = strings.TrimSpace(line)
			low := strings.ToLower(line)
			var rest string
			found := false
			for _, p := range []string{".shell", ".system", "\\!", "system"} {
				if r, ok := strings.CutPrefix(low, p); ok && (r == "" || r[0] == ' ' || p == "\\!") {
					rest, found = strings.TrimSpace(line[len(p):]), true
					break
				}
			}
			switch {
			case found && rest != "":
				code = append(code, Word{Text: t.Text, Value: rest, Static: true, Span: t.Span})
			case found, strings.HasPrefix(low, ".load"), strings.HasPrefix(low, "\\o |"), strings.HasPrefix(low, "\\o|"),
				strings.HasPrefix(low, "\\g |"), strings.HasPrefix(low, "\\copy") && strings.Contains(low, "program"),
				strings.Contains(low, "copy") && strings.Contains(low, " program "):
				if cmd.Opaque == "" {
					cmd.Opaque, cmd.OpaqueSpan = cmd.Program+" "+t.Text+" runs a program or a shell the policy cannot judge", t.Span
				}
			}
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	for _, c := range code {
		f.code(owner, []Word{c}, cmd.Program+" shell escape", false)
	}
}

// tmux judges tmux: tmux -c and the shell command of new-session,
// new-window, split-window, respawn-pane and run-shell are parsed as sh
// -c; keys sent to a pane (send-keys), if-shell and sourced files cannot
// be judged.
func (f *frame) tmux(cmd *Command, args []Word, rc run) {
	opts, rest := splitOpts(&spec{shortVal: "LSfcT"}, args)
	f.apply(cmd, &opts)
	var code []Word
	via := "tmux -c"
	if c, ok := opts.value("-c"); ok {
		code = append(code, c)
	}
	if len(rest) > 0 && rest[0].Static {
		sub := rest[0].Value
		cmd.Subcommand = sub
		val := "ceFflnstxy"
		if sub == "run-shell" || sub == "run" {
			val = "cdt"
		}
		q := parseArgs(&spec{posix: true, shortVal: val}, rest[1:])
		cmd.Flags = append(cmd.Flags, q.flags...)
		cmd.Operands = append(cmd.Operands, q.operands...)
		switch sub {
		case "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell", "run":
			if ws := q.operands; len(ws) > 0 {
				via = "tmux " + sub
				parts := make([]string, len(ws))
				for i, w := range ws {
					parts[i] = w.Value
					if !w.Static && cmd.Opaque == "" {
						cmd.Opaque, cmd.OpaqueSpan = "tmux "+sub+" runs a command known only at run time", w.Span
					}
				}
				if cmd.Opaque == "" {
					code = append(code, Word{Text: ws[0].Text, Value: strings.Join(parts, " "), Static: true, Span: Span{ws[0].Span.Start, ws[len(ws)-1].Span.End}})
				}
			}
		case "send-keys", "send", "if-shell", "if", "source-file", "source", "pipe-pane", "pipep", "command-prompt", "display-popup", "popup":
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "tmux "+sub+" makes a shell run what the policy cannot judge", cmd.Span
			}
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	for _, c := range code {
		f.code(owner, []Word{c}, via, false)
	}
}
