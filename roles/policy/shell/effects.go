package shell

import (
	"strings"
)

// Effect classes: what a command does to data, whatever its spelling. A
// rule may name a class, and a rule for rm -r stands for both.
const (
	// RecursiveDelete deletes a directory tree: rm -r, find -delete, find
	// -exec rm, rsync --delete*, rsync --remove-source-files, git clean -d
	// -f, tar --remove-files.
	RecursiveDelete = "recursive-delete"
	// Wipe destroys data without deleting the tree: truncation to empty
	// (: > f, > f, truncate -s 0, cp /dev/null f), dd of=, shred, mv to
	// /dev/null, chmod -R 000.
	Wipe = "wipe"
)

// EffectClasses lists the effect classes a rule may name.
var EffectClasses = []string{RecursiveDelete, Wipe}

// Effect is one effect of a command on data.
type Effect struct {
	// Class is RecursiveDelete or Wipe.
	Class string `json:"class"`
	// How is the spelling that has the effect: "find -delete", "rm -r",
	// "rsync --delete", "> redirect".
	How string `json:"how"`
	// Targets are the paths it destroys.
	Targets []Write `json:"targets,omitempty"`
	// Span locates the spelling in the judged command.
	Span Span `json:"span"`
}

// effects finds the effects of a simple command from its program, flags,
// operands and writes.
func (f *frame) effects(c *Command) {
	if c.Opaque != "" && c.Program == "" {
		return
	}
	targets := func(ws []Word, how string) []Write {
		out := make([]Write, 0, len(ws))
		for _, w := range ws {
			out = append(out, f.write(w, how))
		}
		return out
	}
	add := func(class, how string, sp Span, ts []Write) {
		c.Effects = append(c.Effects, Effect{Class: class, How: how, Targets: ts, Span: sp})
	}
	switch c.Program {
	case "rm":
		if fl, ok := flagNamed(c, "-r"); ok {
			add(RecursiveDelete, "rm "+fl.Text, fl.Span, targets(c.Operands, "rm -r"))
		}
	case "rsync":
		var dest, src []Word
		if n := len(c.Operands); n > 0 {
			dest, src = c.Operands[n-1:], c.Operands[:n-1]
		}
		for _, fl := range c.Flags {
			switch {
			case fl.Name == "--remove-source-files" || fl.Name == "--remove-sent-files":
				add(RecursiveDelete, "rsync "+fl.Name, fl.Span, targets(src, "rsync "+fl.Name))
			case strings.HasPrefix(fl.Name, "--del"):
				add(RecursiveDelete, "rsync "+fl.Name, fl.Span, targets(dest, "rsync "+fl.Name))
			}
		}
	case "git":
		if c.Subcommand == "clean" && c.hasFlag("-f") && c.hasFlag("-d") {
			at := Word{Text: ".", Value: ".", Static: true, Span: c.ProgramSpan}
			if d, ok := c.value("-C"); ok {
				at = d
			}
			fl, _ := flagNamed(c, "-d")
			add(RecursiveDelete, "git clean -d -f", fl.Span, targets([]Word{at}, "git clean"))
		}
	case "tar":
		if fl, ok := flagNamed(c, "--remove-files"); ok {
			add(RecursiveDelete, "tar --remove-files", fl.Span, targets(c.Operands, "tar --remove-files"))
		}
	case "mv":
		dest, src := Word{}, c.Operands
		if t, ok := c.value("-t"); ok {
			dest = t
		} else if n := len(c.Operands); n >= 2 {
			dest, src = c.Operands[n-1], c.Operands[:n-1]
		}
		if dest.Static && (dest.Value == "/dev/null" || dest.Value == "/dev/zero") {
			add(Wipe, "mv to "+dest.Value, dest.Span, targets(src, "mv to "+dest.Value))
		}
	case "chmod":
		if fl, ok := flagNamed(c, "-R"); ok && len(c.Operands) >= 2 && c.Operands[0].Static && noAccess(c.Operands[0].Value) {
			add(Wipe, "chmod -R "+c.Operands[0].Value, fl.Span, targets(c.Operands[1:], "chmod -R "+c.Operands[0].Value))
		}
	case "dd":
		for _, w := range c.Writes {
			if w.How == "dd of=" && !special(w.Path) {
				add(Wipe, "dd of=", w.Span, []Write{w})
			}
		}
	case "truncate":
		if v, ok := c.value("-s"); ok && zeroSize(v.Value) {
			add(Wipe, "truncate -s "+v.Value, v.Span, targets(c.Operands, "truncate"))
		}
	case "shred":
		add(Wipe, "shred", c.ProgramSpan, targets(c.Operands, "shred"))
	case "cp":
		if n := len(c.Operands); n >= 2 {
			for _, s := range c.Operands[:n-1] {
				if s.Static && (s.Value == "/dev/null" || s.Value == "/dev/zero") {
					add(Wipe, "cp "+s.Value, s.Span, targets(c.Operands[n-1:], "cp "+s.Value))
					break
				}
			}
		}
	}
	if silent(c) {
		for _, w := range c.Writes {
			if truncates(w.How) && !special(w.Path) {
				add(Wipe, "truncation by "+strings.TrimSuffix(w.How, " redirect"), w.Span, []Write{w})
			}
		}
	}
}

// silent reports whether a command writes nothing to its output, so that
// its > redirections only empty their files: a redirection alone, :,
// true, false, cat /dev/null, echo -n, printf of an empty format. (exec
// > f sends the output that follows to f: a write, like echo x > f.)
func silent(c *Command) bool {
	switch c.Program {
	case "":
		return c.Opaque == ""
	case ":", "true", "false":
		return true
	case "cat":
		for _, o := range c.Operands {
			if !o.Static || o.Value != "/dev/null" {
				return false
			}
		}
		return len(c.Operands) > 0
	case "echo":
		return len(c.Operands) == 0 && c.hasFlag("-n")
	case "printf":
		return len(c.Operands) == 1 && c.Operands[0].Static && c.Operands[0].Value == ""
	}
	return false
}

// truncates: the redirection empties its target before writing.
func truncates(how string) bool {
	switch how {
	case "> redirect", ">| redirect", "&> redirect", "&>| redirect", ">& redirect":
		return true
	}
	return false
}

// noAccess reports whether a chmod mode leaves nobody able to read (000,
// 0, 0333, a-rwx, a=, ugo-r, u=,g=,o=).
func noAccess(mode string) bool {
	if mode == "" {
		return false
	}
	if strings.Trim(mode, "01234567") == "" {
		if len(mode) > 5 {
			return false
		}
		if len(mode) < 3 {
			mode = strings.Repeat("0", 3-len(mode)) + mode
		}
		for _, d := range mode[len(mode)-3:] {
			if (d-'0')&4 != 0 {
				return false
			}
		}
		return true
	}
	readable := map[byte]bool{'u': true, 'g': true, 'o': true}
	for _, clause := range strings.Split(mode, ",") {
		i := strings.IndexAny(clause, "-=+")
		if i < 0 || strings.ContainsAny(clause[i+1:], "-=+") {
			return false
		}
		who, op, perms := clause[:i], clause[i], clause[i+1:]
		if who == "" || strings.Contains(who, "a") {
			who = "ugo"
		}
		for j := 0; j < len(who); j++ {
			w := who[j]
			if w != 'u' && w != 'g' && w != 'o' {
				return false
			}
			switch {
			case op == '=':
				readable[w] = strings.ContainsAny(perms, "rugo")
			case op == '-' && strings.Contains(perms, "r"):
				readable[w] = false
			case op == '+' && strings.ContainsAny(perms, "rugo"):
				readable[w] = true
			}
		}
	}
	return !readable['u'] && !readable['g'] && !readable['o']
}

// zeroSize reports whether a truncate size is zero (0, 0K, =0).
func zeroSize(v string) bool {
	v = strings.TrimLeft(v, "=<")
	v = strings.TrimRight(v, "KMGTPEZYkBbi")
	return v != "" && strings.Trim(v, "0") == ""
}

func flagNamed(c *Command, name string) (Flag, bool) {
	for _, fl := range c.Flags {
		if fl.Name == name {
			return fl, true
		}
	}
	return Flag{}, false
}

// special paths are not files: writing them destroys nothing.
func special(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}
