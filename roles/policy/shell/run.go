package shell

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// wrap describes a program that runs another command.
type wrap struct {
	sp *spec
	// skip is the number of operands before the command (timeout's
	// duration, chroot's new root).
	skip int
	// none lists flags after which nothing is run (command -v).
	none []string
	// bare, when set, is why the program is opaque without a command (su
	// and chroot start an interactive shell).
	bare string
	// shellFlags start an interactive shell when there is no command.
	shellFlags []string
	// extra: the command receives more arguments at run time (xargs).
	extra bool
	// join: the rest is joined into one shell string (watch, ssh).
	join bool
	// code lists flags whose value is shell code (su -c).
	code []string
	// writes lists flags whose value is a file the program writes.
	writes []string
}

var wrappers = map[string]*wrap{
	"sudo": {sp: &spec{shortVal: "ugCDhpRrtTU", longVal: []string{"--user", "--group", "--close-from", "--chdir", "--host",
		"--prompt", "--role", "--type", "--other-user", "--command-timeout"}, alias: map[string]string{"--user": "-u", "--shell": "-s", "--login": "-i", "--edit": "-e"}},
		none: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "--remove-timestamp", "-V", "--version", "-e", "--help"}, shellFlags: []string{"-s", "-i"}},
	"doas":        {sp: &spec{shortVal: "uC"}, none: []string{"-C"}, shellFlags: []string{"-s"}},
	"pkexec":      {sp: &spec{longVal: []string{"--user"}}, bare: "pkexec without a command starts a root shell"},
	"env":         {sp: &spec{shortVal: "uCSP", longVal: []string{"--unset", "--chdir", "--split-string"}, alias: map[string]string{"--split-string": "-S", "--unset": "-u", "--chdir": "-C", "--ignore-environment": "-i"}}},
	"xargs":       {sp: &spec{shortVal: "adEILlnPsS", longVal: []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, alias: map[string]string{"--replace": "-I", "-i": "-I"}}, extra: true},
	"parallel":    {sp: &spec{shortVal: "jSEIa", longVal: []string{"--jobs", "--sshlogin", "--arg-file"}}, extra: true},
	"nice":        {sp: &spec{shortVal: "n", longVal: []string{"--adjustment"}}},
	"ionice":      {sp: &spec{shortVal: "cnp", longVal: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}}, none: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}},
	"timeout":     {sp: &spec{shortVal: "sk", longVal: []string{"--signal", "--kill-after"}}, skip: 1},
	"nohup":       {sp: &spec{}},
	"setsid":      {sp: &spec{}},
	"unbuffer":    {sp: &spec{}},
	"stdbuf":      {sp: &spec{shortVal: "ioe", longVal: []string{"--input", "--output", "--error"}}},
	"taskset":     {sp: &spec{}, skip: 1, none: []string{"-p", "--pid"}},
	"chrt":        {sp: &spec{shortVal: "T", longVal: []string{"--sched-runtime", "--sched-period", "--sched-deadline"}}, skip: 1, none: []string{"-p", "--pid"}},
	"command":     {sp: &spec{}, none: []string{"-v", "-V"}},
	"builtin":     {sp: &spec{}},
	"exec":        {sp: &spec{shortVal: "a"}},
	"time":        {sp: &spec{shortVal: "fo", longVal: []string{"--format", "--output"}, alias: map[string]string{"--output": "-o"}}, writes: []string{"-o"}},
	"chroot":      {sp: &spec{longVal: []string{"--userspec", "--groups"}}, skip: 1, bare: "chroot without a command starts an interactive shell"},
	"flock":       {sp: &spec{shortVal: "wEc", longVal: []string{"--timeout", "--conflict-exit-code", "--command"}, alias: map[string]string{"--command": "-c"}}, skip: 1, code: []string{"-c"}},
	"watch":       {sp: &spec{shortVal: "nqd", longVal: []string{"--interval", "--differences"}}, join: true},
	"strace":      {sp: &spec{shortVal: "oepsuESIabPX", longVal: []string{"--output", "--expr", "--attach", "--string-limit", "--user", "--env"}, alias: map[string]string{"--output": "-o"}}, writes: []string{"-o"}, none: []string{"-p", "--attach"}},
	"ltrace":      {sp: &spec{shortVal: "oepsuEnaAD"}, writes: []string{"-o"}, none: []string{"-p"}},
	"su":          {sp: &spec{shortVal: "csgGw", longVal: []string{"--command", "--shell", "--group", "--supp-group", "--whitelist-environment"}, alias: map[string]string{"--command": "-c"}}, code: []string{"-c"}, bare: "su without -c starts an interactive shell"},
	"runuser":     {sp: &spec{shortVal: "csgGuw", longVal: []string{"--command", "--shell", "--group", "--supp-group", "--user"}, alias: map[string]string{"--command": "-c", "--user": "-u"}}, code: []string{"-c"}},
	"script":      {sp: &spec{shortVal: "cEIOBT", longVal: []string{"--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing"}, alias: map[string]string{"--command": "-c"}}, code: []string{"-c"}},
	"firejail":    {sp: &spec{}},
	"unshare":     {sp: &spec{shortVal: "SGRw", longVal: []string{"--setuid", "--setgid", "--root", "--wd"}}},
	"nsenter":     {sp: &spec{shortVal: "tSGrw", longVal: []string{"--target", "--setuid", "--setgid"}}},
	"systemd-run": {sp: &spec{shortVal: "puEMH", longVal: []string{"--property", "--unit", "--setenv", "--machine", "--host", "--description", "--slice", "--uid", "--gid", "--working-directory"}}},
	"busybox":     {sp: &spec{}},
	"toybox":      {sp: &spec{}},
	"catchsegv":   {sp: &spec{}},
	"sg":          {sp: &spec{}, skip: 1, join: true, bare: "sg without a command starts an interactive shell"},
	"screen":      {sp: &spec{shortVal: "cehpsStTX", longVal: []string{}}, bare: "screen without a command starts an interactive shell"},
	"ssh":         {sp: specs["ssh"], skip: 1, join: true, bare: "ssh without a command opens a remote shell that reads standard input", none: []string{"-N", "-V"}},
}

func (f *frame) add(c *Command, rc run) {
	if len(rc.feed) > 0 {
		for _, i := range rc.feed {
			if i < len(f.w.cmds) && f.w.cmds[i].Program != "" {
				c.Stdin = append(c.Stdin, f.w.cmds[i].Program)
			}
		}
	}
	f.effects(c)
	if c.Program == "tee" && !c.hasFlag("-a") && f.emptyInput(rc) {
		// tee f with nothing to read empties f.
		for _, o := range c.Operands {
			c.Effects = append(c.Effects, Effect{Class: Wipe, How: "tee with empty input", Targets: []Write{f.write(o, "tee")}, Span: o.Span})
		}
	}
	f.w.add(*c)
}

// emptyInput reports whether a command's standard input is empty:
// /dev/null, or a pipe from commands that write nothing.
func (f *frame) emptyInput(rc run) bool {
	if rc.stdinFile == "/dev/null" {
		return true
	}
	if len(rc.feed) == 0 {
		return false
	}
	for _, i := range rc.feed {
		if i >= len(f.w.cmds) || !silent(&f.w.cmds[i]) || f.w.cmds[i].Program == "" {
			return false
		}
	}
	return true
}

// run judges the words of one simple command.
func (f *frame) run(words []Word, rc run) {
	prog := words[0]
	cmd := Command{Text: rc.text, Span: rc.span, Via: f.viaCopy(), Writes: rc.writes, Env: rc.env, ProgramSpan: prog.Span}
	if rc.envWhy != "" {
		cmd.Opaque, cmd.OpaqueSpan = rc.envWhy, rc.envSpan
	}
	if rc.extra {
		words = append(words, Word{Text: "(arguments supplied at run time)", Value: "(arguments supplied at run time)", Dynamic: rc.extraBy, Span: prog.Span})
	}
	name := ""
	if prog.Static && !prog.Glob && !prog.subst {
		name = programName(prog.Value)
	}
	if name == "" {
		switch {
		case prog.Glob:
			cmd.Opaque = fmt.Sprintf("the program name %s is a pattern the shell expands against file names", prog.Text)
		case prog.Static:
			cmd.Opaque = fmt.Sprintf("the program name %s names no program", prog.Text)
		default:
			cmd.Opaque = fmt.Sprintf("the program name %s is known only at run time (%s)", prog.Text, prog.Dynamic)
		}
		cmd.OpaqueSpan = prog.Span
		cmd.Operands, cmd.Dynamic = words[1:], true
		f.add(&cmd, rc)
		return
	}
	cmd.Program = name
	args := words[1:]
	if f.w.wrote(f, prog.Value) && cmd.Opaque == "" {
		cmd.Opaque = fmt.Sprintf("runs %s, which an earlier part of this command wrote: a copied, linked or downloaded program cannot be judged by its name", prog.Text)
		cmd.OpaqueSpan = prog.Span
	}
	if wr, ok := wrappers[name]; ok {
		f.wrapper(&cmd, args, rc, wr)
		return
	}
	if shells[name] {
		f.shell(&cmd, args, rc)
		return
	}
	if it, ok := interpreterFor(name); ok {
		f.interpreter(&cmd, args, rc, it)
		return
	}
	switch name {
	case "eval":
		f.generic(&cmd, args)
		f.add(&cmd, rc)
		f.code(len(f.w.cmds)-1, args, "eval", true)
		return
	case "source", ".":
		f.generic(&cmd, args)
		if len(cmd.Operands) > 0 && (!cmd.Operands[0].Resolved() || f.w.wrote(f, cmd.Operands[0].Value)) {
			o := cmd.Operands[0]
			cmd.Opaque, cmd.OpaqueSpan = fmt.Sprintf("%s runs a script whose content is known only at run time (%s)", name, o.Text), o.Span
		}
		f.add(&cmd, rc)
		return
	case "trap":
		f.generic(&cmd, args)
		f.add(&cmd, rc)
		if len(args) >= 2 && args[0].Value != "-" && !strings.HasPrefix(args[0].Value, "-") {
			f.code(len(f.w.cmds)-1, args[:1], "trap", false)
		}
		return
	case "alias":
		f.generic(&cmd, args)
		f.add(&cmd, rc)
		for _, o := range cmd.Operands {
			if n, v, ok := strings.Cut(o.Value, "="); ok {
				f.code(len(f.w.cmds)-1, []Word{{Text: o.Text, Value: v, Static: o.Static, Dynamic: o.Dynamic, Span: o.Span}}, "alias "+n, false)
			}
		}
		return
	case "cd", "pushd", "popd":
		f.generic(&cmd, args)
		f.cd(&cmd, rc)
		f.add(&cmd, rc)
		return
	case "find":
		f.find(&cmd, args, rc)
		return
	case "awk", "gawk", "mawk", "nawk", "busybox-awk":
		f.awk(&cmd, args)
	case "at", "batch":
		f.generic(&cmd, args)
		if _, ok := cmd.value("-f"); !ok && !cmd.hasFlag("-l", "-d", "-r", "-c", "-V") {
			f.stdinScript(&cmd, rc, name)
			return
		}
	case "gdb", "gdb-multiarch", "cgdb":
		f.gdb(&cmd, args, rc)
		return
	case "lldb":
		f.lldb(&cmd, args, rc)
		return
	case "sqlite3", "sqlite", "psql", "mysql", "mariadb":
		f.sqlShell(&cmd, args, rc)
		return
	case "tmux":
		f.tmux(&cmd, args, rc)
		return
	case "npx", "npm", "pnpm", "yarn", "bunx":
		f.generic(&cmd, args)
		if w, ok := npmExecCode(&cmd, args); ok {
			f.add(&cmd, rc)
			f.code(len(f.w.cmds)-1, []Word{w}, cmd.Program+" exec -c", false)
			return
		}
	case "sed", "gsed":
		f.generic(&cmd, args)
		f.sed(&cmd, rc)
		return
	case "vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim", "nvi", "vim.basic", "vim.tiny":
		f.generic(&cmd, args)
		f.vim(&cmd, args)
	case "zip":
		f.generic(&cmd, args)
		f.add(&cmd, rc)
		for i, w := range args {
			if w.Static && (w.Value == "-TT" || w.Value == "--unzip-command") && i+1 < len(args) {
				f.code(len(f.w.cmds)-1, args[i+1:i+2], "zip "+w.Value, false)
			} else if v, ok := strings.CutPrefix(w.Value, "-TT"); ok && w.Static && v != "" {
				f.code(len(f.w.cmds)-1, []Word{{Text: w.Text, Value: strings.TrimPrefix(v, "="), Static: true, Span: w.Span}}, "zip -TT", false)
			} else if v, ok := strings.CutPrefix(w.Value, "--unzip-command="); ok && w.Static {
				f.code(len(f.w.cmds)-1, []Word{{Text: w.Text, Value: v, Static: true, Span: w.Span}}, "zip --unzip-command", false)
			}
		}
		return
	default:
		f.generic(&cmd, args)
	}
	code := f.programRisks(&cmd)
	f.add(&cmd, rc)
	if w, ok := cmd.value("-e"); ok && cmd.Program == "rsync" {
		f.code(len(f.w.cmds)-1, []Word{w}, "rsync -e", false)
	}
	for _, c := range code {
		f.code(len(f.w.cmds)-1, []Word{c.w}, c.name, false)
	}
}

// value is the last value given to a flag of the command's own parse.
func (c *Command) value(names ...string) (Word, bool) {
	for i := len(c.values) - 1; i >= 0; i-- {
		for _, n := range names {
			if c.values[i].name == n {
				return c.values[i].w, true
			}
		}
	}
	return Word{}, false
}

// generic reads a command's options with its program's spec and finds
// the files it writes.
func (f *frame) generic(cmd *Command, args []Word) {
	p := parseArgs(specFor(cmd.Program), args)
	f.apply(cmd, &p)
	cmd.Writes = append(cmd.Writes, f.writeTargets(cmd)...)
}

func (f *frame) apply(cmd *Command, p *parsed) {
	cmd.Flags, cmd.Operands, cmd.Subcommand = p.flags, p.operands, p.subcommand
	cmd.Dynamic = cmd.Dynamic || p.dynamic
	for name, ws := range p.values {
		for _, w := range ws {
			cmd.values = append(cmd.values, flagValue{name: name, w: w})
		}
	}
	if len(cmd.values) > 1 {
		// Map iteration order must not leak into results.
		sortValues(cmd.values)
	}
}

// code walks words that hold shell code (eval's arguments, trap's
// action). owner is the index of the command that runs it, made opaque
// when the code is known only at run time.
func (f *frame) code(owner int, ws []Word, via string, shareCwd bool) {
	if len(ws) == 0 {
		return
	}
	vals := make([]string, len(ws))
	for i, w := range ws {
		if !w.Static {
			c := &f.w.cmds[owner]
			if c.Opaque == "" {
				c.Opaque = fmt.Sprintf("%s runs shell code known only at run time (%s)", via, w.Text)
				if w.Dynamic != "" && w.Dynamic != w.Text {
					c.Opaque = fmt.Sprintf("%s runs shell code known only at run time (%s: %s)", via, w.Text, w.Dynamic)
				}
				c.OpaqueSpan = w.Span
			}
			return
		}
		vals[i] = w.Value
	}
	f.nested(strings.Join(vals, " "), ws, via, shareCwd)
}

func (f *frame) cd(cmd *Command, rc run) {
	if cmd.Program == "popd" || rc.cond || cmd.Dynamic {
		f.cwd = ""
		return
	}
	if len(cmd.Operands) == 0 {
		f.cwd = "~"
		return
	}
	o := cmd.Operands[0]
	switch {
	case !o.Resolved() || o.Value == "-":
		f.cwd = ""
	case strings.HasPrefix(o.Value, "/") || strings.HasPrefix(o.Value, "~"):
		f.cwd = path.Clean(o.Value)
	case f.cwd != "":
		f.cwd = path.Join(f.cwd, o.Value)
	}
}

// wrapper judges a program that runs another: it is a command of its own
// (a rule may name sudo), followed by the command it runs.
func (f *frame) wrapper(cmd *Command, args []Word, rc run, wr *wrap) {
	cmd.Runs = true
	opts, rest := splitOpts(wr.sp, args)
	f.apply(cmd, &opts)
	for _, n := range wr.writes {
		if w, ok := opts.value(n); ok {
			cmd.Writes = append(cmd.Writes, f.write(w, cmd.Program+" "+n))
		}
	}
	if cmd.Program == "env" {
		for len(rest) > 0 && rest[0].Static && strings.Contains(rest[0].Value, "=") && !strings.HasPrefix(rest[0].Value, "=") {
			n, _, _ := strings.Cut(rest[0].Value, "=")
			cmd.Env = append(cmd.Env, n)
			if EnvCode(n) && cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "sets "+n+", which makes programs load or run code the command does not show", rest[0].Span
			}
			rest = rest[1:]
		}
		if len(rest) > 0 && !rest[0].Static && strings.Contains(rest[0].Text, "=") {
			cmd.Opaque, cmd.OpaqueSpan = "env assignment known only at run time: "+rest[0].Text, rest[0].Span
		}
	}
	for i := 0; i < wr.skip && len(rest) > 0; i++ {
		cmd.Operands = append(cmd.Operands, rest[0])
		rest = rest[1:]
	}
	if cmd.Program == "flock" && len(rest) > 0 && rest[0].Static && rest[0].Value == "--" {
		rest = rest[1:]
	}
	if cmd.Program == "sg" && len(rest) > 1 && rest[0].Static && rest[0].Value == "-c" {
		rest = rest[1:] // sg GROUP -c 'command'
	}
	if cmd.Program == "flock" && len(rest) >= 2 && rest[0].Static && (rest[0].Value == "-c" || rest[0].Value == "--command") {
		// flock FILE -c 'command': the command string comes after the lock.
		cmd.Flags = append(cmd.Flags, Flag{Name: "-c", Text: rest[0].Text, Span: rest[0].Span})
		opts.setValue("-c", rest[1])
		cmd.Operands = append(cmd.Operands, rest[2:]...)
		rest = nil
	}
	if cmd.Program == "parallel" {
		f.parallel(cmd, rest, rc)
		return
	}
	if opts.has(wr.none...) && len(wr.none) > 0 {
		cmd.Runs = false
		cmd.Operands = append(cmd.Operands, rest...)
		if cmd.Program == "sudo" && opts.has("-e") {
			for _, w := range rest {
				cmd.Writes = append(cmd.Writes, f.write(w, "sudo -e"))
			}
		}
		f.add(cmd, rc)
		return
	}
	label := cmd.Program
	if cmd.Program == "ssh" && len(cmd.Operands) > 0 {
		label = "ssh " + cmd.Operands[0].Text
	}
	codeFlag := false
	for _, n := range wr.code {
		if _, ok := opts.value(n); ok {
			codeFlag = true
		}
	}
	split, hasSplit := opts.value("-S")
	if cmd.Program != "env" {
		hasSplit = false
	}
	if len(rest) == 0 && !codeFlag && !hasSplit && cmd.Opaque == "" {
		switch {
		case opts.has(wr.shellFlags...) && len(wr.shellFlags) > 0:
			cmd.Opaque, cmd.OpaqueSpan = cmd.Program+" without a command starts an interactive shell", cmd.Span
		case wr.bare != "":
			cmd.Opaque, cmd.OpaqueSpan = wr.bare, cmd.Span
		}
	}
	if cmd.Program == "ssh" {
		for _, o := range opts.values["-o"] {
			k, _, _ := strings.Cut(strings.ToLower(o.Value), "=")
			if (k == "proxycommand" || k == "localcommand" || k == "permitlocalcommand") && !o.Static && cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "ssh "+o.Text+" is known only at run time", o.Span
			}
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	if cmd.Program == "ssh" {
		for _, o := range opts.values["-o"] {
			k, v, _ := strings.Cut(o.Value, "=")
			if k = strings.ToLower(strings.TrimSpace(k)); k == "proxycommand" || k == "localcommand" {
				f.nested(v, nil, "ssh -o "+k, false)
			}
		}
	}
	for _, n := range wr.code {
		if w, ok := opts.value(n); ok {
			f.code(owner, []Word{w}, cmd.Program+" "+n, false)
		}
	}
	if hasSplit {
		ws := append([]Word{split}, rest...)
		f.code(owner, ws, "env -S", false)
		return
	}
	if len(rest) == 0 {
		return
	}
	if wr.join {
		f.code(owner, rest, label, false)
		return
	}
	saved := f.via
	f.via = append(f.viaCopy(), label)
	inner := run{feed: rc.feed, cond: rc.cond, text: rc.text, span: rc.span, stdin: rc.stdin, stdinOK: rc.stdinOK,
		stdinSet: rc.stdinSet, stdinFile: rc.stdinFile, stdinFrom: rc.stdinFrom}
	if wr.extra {
		inner.extra, inner.extraBy = true, "arguments "+cmd.Program+" reads from standard input"
		if r, ok := opts.value("-I"); ok && r.Static && r.Value != "" {
			rest = markDynamic(rest, r.Value, cmd.Program+" replaces "+r.Value)
		}
	}
	if f.base >= 0 && rest[0].Span.Start >= f.base && rest[0].Span.Start <= rc.span.End && rc.span.End-f.base <= len(f.src) {
		inner.span = Span{rest[0].Span.Start, rc.span.End}
		inner.text = f.src[inner.span.Start-f.base : inner.span.End-f.base]
	}
	f.run(rest, inner)
	f.via = saved
}

// markDynamic makes every word holding placeholder (xargs -I, find -exec
// {}) known only at run time.
func markDynamic(ws []Word, placeholder, by string) []Word {
	out := make([]Word, len(ws))
	for i, w := range ws {
		if w.Static && strings.Contains(w.Value, placeholder) {
			w.Static, w.Dynamic = false, by
		}
		out[i] = w
	}
	return out
}

// shell judges sh, bash and the like: the script they run is parsed when
// it is in the command, and is opaque when it comes from elsewhere.
func (f *frame) shell(cmd *Command, args []Word, rc run) {
	name := cmd.Program
	var cflag, sflag bool
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			break
		}
		v := w.Value
		if v == "--" || v == "-" {
			i++
			break
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		if strings.HasPrefix(v, "--") {
			cmd.Flags = append(cmd.Flags, Flag{Name: v, Text: v, Span: w.Span})
			if v == "--rcfile" || v == "--init-file" {
				i++
			}
			continue
		}
		for _, c := range v[1:] {
			cmd.Flags = append(cmd.Flags, Flag{Name: v[:1] + string(c), Text: v, Span: w.Span})
		}
		if v[0] == '-' && strings.ContainsRune(v, 'c') {
			cflag = true
		}
		if strings.ContainsRune(v[1:], 's') {
			sflag = true
		}
		if strings.ContainsAny(v[1:], "oO") && i+1 < len(args) {
			i++
		}
	}
	rest := args[i:]
	cmd.Operands = rest
	switch {
	case cflag:
		if len(rest) == 0 {
			f.add(cmd, rc)
			return
		}
		f.add(cmd, rc)
		f.code(len(f.w.cmds)-1, rest[:1], name+" -c", false)
	case !sflag && len(rest) > 0 && !isStdinPath(rest[0]):
		s := rest[0]
		switch {
		case !s.Resolved():
			cmd.Opaque, cmd.OpaqueSpan = fmt.Sprintf("%s runs a script known only at run time (%s)", name, s.Text), s.Span
		case f.w.wrote(f, s.Value):
			cmd.Opaque, cmd.OpaqueSpan = fmt.Sprintf("%s runs %s, which an earlier part of this command wrote: its content cannot be judged", name, s.Text), s.Span
		}
		f.add(cmd, rc)
	default:
		f.stdinScript(cmd, rc, name)
	}
}

func isStdinPath(w Word) bool {
	switch w.Value {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return w.Static
	}
	return false
}

// stdinScript judges a program that reads a script from standard input:
// a here-document in the command is parsed; anything else is opaque.
func (f *frame) stdinScript(cmd *Command, rc run, name string) {
	if rc.stdinSet && rc.stdinOK {
		f.add(cmd, rc)
		if rc.stdin != "" {
			f.nested(rc.stdin, rc.stdinFrom, name+" <<here-document", false)
		}
		return
	}
	why := name + " reads its script from standard input"
	switch {
	case rc.stdinFile != "":
		why += " (the file " + rc.stdinFile + ")"
	case rc.stdinSet:
		why += " (a here-document built at run time)"
	case len(rc.feed) > 0:
		why += ", fed by " + f.describeFeed(rc.feed)
	}
	cmd.Opaque, cmd.OpaqueSpan = why+": the script cannot be judged", cmd.Span
	f.add(cmd, rc)
}

// stdinCode judges an interpreter reading its program from standard
// input: whatever feeds it, the code is not shell and cannot be judged.
func (f *frame) stdinCode(cmd *Command, rc run, name string) {
	why := name + " reads " + name + " code from standard input"
	switch {
	case rc.stdinFile != "":
		why += " (the file " + rc.stdinFile + ")"
	case rc.stdinSet:
		why += " (a here-document)"
	case len(rc.feed) > 0:
		why += ", fed by " + f.describeFeed(rc.feed)
	}
	cmd.Opaque, cmd.OpaqueSpan = why+": the code cannot be judged", cmd.Span
	f.add(cmd, rc)
}

func (f *frame) describeFeed(feed []int) string {
	var parts []string
	for _, i := range feed {
		if i >= len(f.w.cmds) {
			continue
		}
		c := &f.w.cmds[i]
		if c.Program == "" {
			continue
		}
		d := c.Program
		switch {
		case isDecoder(c):
			d += " (a decoder: " + c.Text + ")"
		case isFetcher(c.Program):
			d += " (content from the network)"
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return "a pipe"
	}
	return "a pipe from " + strings.Join(parts, " | ")
}

// interpreter judges python, perl, node…: inline code is opaque wherever
// it comes among the options (python3 -W ignore -c, perl -Mstrict -e,
// node -r fs -e, deno eval), a script file is not judged further.
func (f *frame) interpreter(cmd *Command, args []Word, rc run, it interpreter) {
	name := cmd.Program
	info := false
	// ambiguous is an option the judge does not know, written without
	// "=": the word after it may be its value rather than the script.
	ambiguous := ""
	sub := ""
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			cmd.Operands = args[i:]
			cmd.Opaque, cmd.OpaqueSpan = fmt.Sprintf("%s runs code or a script known only at run time (%s)", name, w.Text), w.Span
			f.add(cmd, rc)
			return
		}
		v := w.Value
		if v == "--" {
			args = args[i+1:]
			break
		}
		if v == "-" || len(v) < 2 || v[0] != '-' {
			if sub == "" && slices.Contains(it.inlineSubs, v) {
				cmd.Subcommand = v
				f.inline(cmd, rc, Word{Text: name + " " + v, Span: w.Span}, inlineCode(args[i+1:]))
				return
			}
			if sub == "" && slices.Contains(it.runSubs, v) {
				sub, cmd.Subcommand = v, v
				continue
			}
			cmd.Operands = args[i:]
			if v == "-" || isStdinPath(w) {
				f.stdinCode(cmd, rc, name)
				return
			}
			if ambiguous != "" {
				for _, later := range args[i+1:] {
					if later.Static && it.codeFlag(later.Value) {
						cmd.Opaque = fmt.Sprintf("%s %s may take %s as its value, and %s runs inline code after it, which the policy cannot judge", name, ambiguous, w.Text, later.Text)
						cmd.OpaqueSpan = later.Span
						break
					}
				}
			}
			f.add(cmd, rc)
			return
		}
		ambiguous = ""
		cmd.Flags = append(cmd.Flags, Flag{Name: v, Text: v, Span: w.Span})
		long, _, eq := strings.Cut(v, "=")
		if slices.Contains(it.longCode, long) {
			f.inline(cmd, rc, w, args[i+1:])
			return
		}
		if slices.Contains(it.info, v) {
			info = true
		}
		if strings.HasPrefix(v, "--") {
			switch {
			case eq:
			case slices.Contains(it.longVal, v):
				i++
			case !slices.Contains(it.info, v):
				ambiguous = v
			}
			continue
		}
	letters:
		for j := 1; j < len(v); j++ {
			c := v[j]
			switch {
			case strings.IndexByte(it.inline, c) >= 0:
				f.inline(cmd, rc, w, args[i+1:])
				return
			case it.module != "" && c == it.module[0]:
				mod := v[j+1:]
				if mod == "" && i+1 < len(args) {
					mod = args[i+1].Value
				}
				cmd.Operands = args[i+1:]
				if codeModules[mod] {
					cmd.Opaque, cmd.OpaqueSpan = fmt.Sprintf("%s -m %s runs its arguments as %s code, which the policy cannot judge", name, mod, name), w.Span
				}
				f.add(cmd, rc)
				return
			case strings.IndexByte(it.shortVal, c) >= 0:
				if j+1 == len(v) {
					i++ // the value is the next word
				}
				break letters
			case hasCont(it, c):
				set := it.cont[c]
				if j+1 < len(v) && v[j+1] == ':' {
					break letters // perl -d:Trace, ruby -W:no-deprecated
				}
				for n := 0; j+1 < len(v) && strings.IndexByte(set, v[j+1]) >= 0; n++ {
					if c == 'K' && n == 1 {
						break // ruby -K takes one letter
					}
					j++
				}
			case strings.IndexByte(it.attached, c) >= 0:
				// The rest of the word is the value; inline code letters in
				// it are read as code anyway (perl -pie is -i with suffix "e",
				// but nothing is lost by judging it as code).
				if strings.ContainsAny(v[j+1:], it.inline) && (c == 'i' || c == 'x') {
					f.inline(cmd, rc, w, args[i+1:])
					return
				}
				break letters
			}
		}
	}
	if info {
		f.add(cmd, rc)
		return
	}
	f.stdinCode(cmd, rc, name)
}

// hasCont reports whether c is a flag of it.cont.
func hasCont(it interpreter, c byte) bool {
	_, ok := it.cont[c]
	return ok
}

// codeModules are Python modules that run their arguments as code
// (python3 -m timeit 'code').
var codeModules = map[string]bool{"timeit": true, "pdb": true, "code": true}

// codeFlag reports whether word is an option carrying inline code.
func (it interpreter) codeFlag(v string) bool {
	if len(v) < 2 || v[0] != '-' {
		return false
	}
	long, _, _ := strings.Cut(v, "=")
	if slices.Contains(it.longCode, long) {
		return true
	}
	if strings.HasPrefix(v, "--") {
		return false
	}
	return strings.ContainsAny(v[1:], it.inline) && it.inline != ""
}

// inlineCode is the code operand after a subcommand such as deno eval:
// its options come first.
func inlineCode(rest []Word) []Word {
	for i, w := range rest {
		if !w.Static || !strings.HasPrefix(w.Value, "-") {
			return rest[i:]
		}
	}
	return nil
}

func (f *frame) inline(cmd *Command, rc run, flag Word, rest []Word) {
	cmd.Operands = rest
	// Only the code is unseen when nothing else is and the code is a
	// word of its own: a rule may then allow that exact code.
	cmd.Inline = cmd.Opaque == "" && !strings.Contains(flag.Text, "=") && len(rest) > 0 && rest[0].Static && !cmd.Dynamic
	cmd.Opaque = fmt.Sprintf("%s %s runs inline %s code, which the policy cannot judge", cmd.Program, flag.Text, cmd.Program)
	cmd.OpaqueSpan = flag.Span
	if len(rest) > 0 {
		cmd.OpaqueSpan = Span{flag.Span.Start, rest[0].Span.End}
	}
	f.add(cmd, rc)
}

var awkRuns = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`system\s*\(|\|\s*getline|\b(print|printf)\b[^;}]*\|\s*"|\b(print|printf)\b[^;}]*>`)
})

// awk judges an awk program: one that starts commands or writes files is
// opaque.
func (f *frame) awk(cmd *Command, args []Word) {
	p := parseArgs(&spec{shortVal: "fvFe", longVal: []string{"--file", "--assign", "--field-separator", "--source"}, alias: map[string]string{"--source": "-e", "--file": "-f"}}, args)
	f.apply(cmd, &p)
	progs := p.values["-e"]
	if _, ok := p.value("-f"); !ok && len(progs) == 0 && len(p.operands) > 0 {
		progs = p.operands[:1]
	}
	for _, w := range progs {
		if !w.Static {
			cmd.Opaque, cmd.OpaqueSpan = "the awk program is known only at run time ("+w.Text+")", w.Span
			return
		}
		if awkRuns().MatchString(w.Value) {
			cmd.Opaque, cmd.OpaqueSpan = "the awk program starts commands or writes files (system(), pipes, print >), which the policy cannot judge", w.Span
			return
		}
	}
}

// find judges find: -exec and -ok run commands, -delete deletes.
func (f *frame) find(cmd *Command, args []Word, rc run) {
	i := 0
	var starts []Word
	for ; i < len(args); i++ {
		v := args[i].Value
		if args[i].Static && (strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ",") {
			break
		}
		starts = append(starts, args[i])
	}
	cmd.Operands = append(cmd.Operands, starts...)
	type execCmd struct {
		words []Word
		flag  string
	}
	var execs []execCmd
	// filtered: a name test limits what is deleted (unless negated, or
	// either of two expressions may hold).
	filtered, either := false, false
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			cmd.Dynamic = true
			cmd.Operands = append(cmd.Operands, w)
			continue
		}
		v := w.Value
		if !strings.HasPrefix(v, "-") {
			cmd.Operands = append(cmd.Operands, w)
			continue
		}
		cmd.Flags = append(cmd.Flags, Flag{Name: v, Text: v, Span: w.Span})
		switch v {
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname", "-samefile", "-inum":
			if !negated(args, i) && i+1 < len(args) && args[i+1].Static && namesLiterally(args[i+1].Value) {
				filtered = true
			}
		case "-empty":
			filtered = filtered || !negated(args, i)
		case "-o", "-or":
			either = true
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for ; j < len(args); j++ {
				if args[j].Static && (args[j].Value == ";" || args[j].Value == "+") {
					break
				}
			}
			execs = append(execs, execCmd{words: args[i+1 : j], flag: v})
			i = j
		case "-delete":
			targets := starts
			if len(targets) == 0 {
				targets = []Word{{Text: ".", Value: ".", Static: true, Span: w.Span}}
			}
			for _, t := range targets {
				cmd.Writes = append(cmd.Writes, f.write(t, "find -delete"))
			}
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				i++
				cmd.Writes = append(cmd.Writes, f.write(args[i], "find "+v))
			}
		}
	}
	if !filtered || either || slices.ContainsFunc(args, func(w Word) bool { return w.Static && w.Value == "," }) {
		targets := make([]Write, 0, len(starts))
		for _, t := range starts {
			targets = append(targets, f.write(t, "find"))
		}
		if len(starts) == 0 {
			targets = append(targets, f.write(Word{Text: ".", Value: ".", Static: true, Span: cmd.ProgramSpan}, "find"))
		}
		for _, fl := range cmd.Flags {
			if fl.Name == "-delete" {
				cmd.Effects = append(cmd.Effects, Effect{Class: RecursiveDelete, How: "find -delete", Targets: targets, Span: fl.Span})
			}
		}
		for _, e := range execs {
			if len(e.words) == 0 || !e.words[0].Static {
				continue
			}
			switch prog := programName(e.words[0].Value); prog {
			case "rm", "unlink", "shred", "srm", "rmdir":
				cmd.Effects = append(cmd.Effects, Effect{Class: RecursiveDelete, How: "find " + e.flag + " " + prog, Targets: targets, Span: e.words[0].Span})
			case "truncate", "dd":
				cmd.Effects = append(cmd.Effects, Effect{Class: Wipe, How: "find " + e.flag + " " + prog, Targets: targets, Span: e.words[0].Span})
			}
		}
	}
	f.add(cmd, rc)
	for _, e := range execs {
		if len(e.words) == 0 {
			continue
		}
		// {} is each file found: under the start path when there is one
		// static start; inside any other word it is known only at run time.
		ws := markDynamic(e.words, "{}", "find replaces {} with each file found")
		if len(starts) == 1 && starts[0].Resolved() {
			for k, w := range ws {
				if w.Text == "{}" {
					w.Value, w.Static, w.Dynamic = strings.TrimSuffix(starts[0].Value, "/")+"/{}", true, ""
					ws[k] = w
				}
			}
		}
		saved := f.via
		f.via = append(f.viaCopy(), "find "+e.flag)
		f.run(ws, run{text: rc.text, span: rc.span, cond: true})
		f.via = saved
	}
}

// negated reports whether the find test at args[i] is negated (! -name x).
func negated(args []Word, i int) bool {
	return i > 0 && args[i-1].Static && (args[i-1].Value == "!" || args[i-1].Value == "-not")
}

// namesLiterally reports whether a find name pattern has a literal
// character outside its wildcards and bracket expressions ('*.tmp' does,
// '*' and '[a-z]*' do not).
func namesLiterally(p string) bool {
	depth := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '[':
			depth = true
		case c == ']':
			depth = false
		case depth, c == '*', c == '?', c == '.', c == '^', c == '$', c == '+', c == '\\':
		default:
			return true
		}
	}
	return false
}

// programRisks marks program options that run commands the words do not
// show, and returns the option values that are shell code to parse (git
// -c core.pager='…'), named by the option.
func (f *frame) programRisks(cmd *Command) []flagValue {
	if cmd.Opaque != "" && cmd.Program != "git" {
		return nil
	}
	switch cmd.Program {
	case "tar":
		for _, fl := range cmd.Flags {
			switch fl.Name {
			case "--to-command", "-I", "--use-compress-program", "--checkpoint-action", "-F", "--info-script", "--new-volume-script", "--rsh-command":
				cmd.Opaque, cmd.OpaqueSpan = "tar "+fl.Text+" runs a command the policy cannot judge", fl.Span
				return nil
			}
		}
	case "git":
		var code []flagValue
		for _, v := range cmd.values {
			if v.name != "-c" && v.name != "--config-env" {
				continue
			}
			key, val, _ := strings.Cut(v.w.Value, "=")
			k := strings.ToLower(key)
			shellCode := k == "core.pager" || strings.HasPrefix(k, "pager.") || k == "core.editor" || k == "sequence.editor" ||
				k == "core.sshcommand" || k == "diff.external" || strings.HasSuffix(k, "command") ||
				(strings.HasPrefix(k, "alias.") && strings.HasPrefix(val, "!"))
			if shellCode && v.w.Static && v.name == "-c" {
				// git runs these through sh -c: parse them as such.
				code = append(code, flagValue{name: "git -c " + key, w: Word{Text: v.w.Text, Value: strings.TrimPrefix(val, "!"), Static: true, Span: v.w.Span}})
				if k == "core.pager" || strings.HasPrefix(k, "pager.") {
					continue // run as written, with nothing added
				}
			}
			if cmd.Opaque != "" {
				continue
			}
			if strings.HasPrefix(k, "alias.") || strings.HasSuffix(k, "command") || strings.HasSuffix(k, ".textconv") ||
				strings.HasSuffix(k, ".helper") || k == "core.editor" || k == "sequence.editor" || k == "core.hookspath" ||
				k == "core.pager" || strings.HasPrefix(k, "pager.") ||
				k == "core.fsmonitor" || k == "diff.external" || k == "core.sshcommand" || !v.w.Static {
				cmd.Opaque, cmd.OpaqueSpan = "git -c "+v.w.Text+" can make git run a command the policy cannot judge (with arguments git adds)", v.w.Span
			}
		}
		return code
	}
	return nil
}

// gdbUnseen are gdb commands that run code the judge cannot read.
var gdbUnseen = map[string]bool{
	"python": true, "py": true, "pi": true, "python-interactive": true, "guile": true, "gu": true, "guile-repl": true,
	"source": true, "pipe": true, "|": true, "compile": true, "call": true, "shell": true, "!": true, "eval": true,
	"define": true, "document": true, "alias": true,
}

// gdb judges gdb: -ex 'shell …' and -ex '!…' are shell code, parsed as
// sh -c; commands that run Python, Guile, a command file or a function
// call in the debugged program cannot be judged.
func (f *frame) gdb(cmd *Command, args []Word, rc run) {
	p := parseArgs(&spec{whole: true, longVal: []string{"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex",
		"-init-eval-command", "--init-eval-command", "-x", "--x", "-command", "--command", "-ix", "--ix", "-init-command",
		"--init-command", "-p", "--p", "-pid", "--pid", "-cd", "--cd", "-d", "--d", "-directory", "--directory", "-s", "--s",
		"-symbols", "--symbols", "-e", "--e", "-exec", "--exec", "-se", "--se", "-c", "--c", "-core", "--core", "-data-directory",
		"--data-directory", "-D", "-tty", "--tty", "-b", "-l", "-i", "--interpreter", "-interpreter"}}, args)
	f.apply(cmd, &p)
	var shellCode []flagValue
	for _, v := range cmd.values {
		name := strings.TrimLeft(v.name, "-")
		switch name {
		case "x", "command", "ix", "init-command":
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "gdb "+v.name+" runs the gdb commands of "+v.w.Text+", which the policy cannot read", v.w.Span
			}
			continue
		case "ex", "eval-command", "iex", "init-eval-command":
		default:
			continue
		}
		if !v.w.Static {
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "gdb "+v.name+" runs a gdb command known only at run time ("+v.w.Text+")", v.w.Span
			}
			continue
		}
		line := strings.TrimSpace(v.w.Value)
		first, rest, _ := strings.Cut(line, " ")
		switch {
		case strings.HasPrefix(line, "!") && strings.TrimSpace(line[1:]) != "":
			shellCode = append(shellCode, flagValue{name: "gdb " + v.name, w: Word{Text: v.w.Text, Value: line[1:], Static: true, Span: v.w.Span}})
		case (first == "shell" || first == "she" || first == "shel") && strings.TrimSpace(rest) != "":
			shellCode = append(shellCode, flagValue{name: "gdb " + v.name, w: Word{Text: v.w.Text, Value: rest, Static: true, Span: v.w.Span}})
		case gdbUnseen[first] || strings.HasPrefix(first, "!") || strings.HasPrefix(first, "|") || strings.ContainsAny(line, "(!|") ||
			strings.Contains(" "+line+" ", " shell ") || strings.Contains(line, "$_shell"):
			if cmd.Opaque == "" {
				cmd.Opaque, cmd.OpaqueSpan = "gdb "+v.name+" "+v.w.Text+" runs code or a shell the policy cannot judge", v.w.Span
			}
		}
	}
	f.add(cmd, rc)
	owner := len(f.w.cmds) - 1
	for _, c := range shellCode {
		f.code(owner, []Word{c.w}, c.name, false)
	}
}

// vim judges vim and friends: ex commands given with -c, --cmd, +cmd or a
// script (-S, -s, -u) can run anything (:!…, :call system(), :py), and ex
// mode reads its commands from standard input.
func (f *frame) vim(cmd *Command, args []Word) {
	if cmd.Opaque != "" {
		return
	}
	for i, w := range args {
		if !w.Static {
			continue
		}
		v := w.Value
		switch {
		case v == "-c" || v == "--cmd" || v == "-S" || v == "-s" || v == "-u" || v == "-es" || v == "-Es" || v == "-e" || v == "-E":
			what := v
			if i+1 < len(args) && v != "-es" && v != "-Es" && v != "-e" && v != "-E" {
				what += " " + args[i+1].Text
			}
			cmd.Opaque, cmd.OpaqueSpan = cmd.Program+" "+what+" runs editor commands (which can run shell commands) the policy cannot judge", w.Span
			return
		case strings.HasPrefix(v, "+") && len(v) > 1 && !isNumber(v[1:]):
			cmd.Opaque, cmd.OpaqueSpan = cmd.Program+" "+w.Text+" runs an editor command (which can run shell commands) the policy cannot judge", w.Span
			return
		}
	}
}
