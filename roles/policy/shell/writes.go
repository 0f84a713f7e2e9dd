package shell

import "strings"

// writeTargets are the files a command's arguments name for writing, for
// the programs known to write them.
func (f *frame) writeTargets(cmd *Command) []Write {
	ops := cmd.Operands
	how := cmd.Program
	all := func(ws []Word) []Write {
		out := make([]Write, 0, len(ws))
		for _, w := range ws {
			out = append(out, f.write(w, how))
		}
		return out
	}
	switch cmd.Program {
	case "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "tee", "mkfifo", "wipefs", "mkswap", "blkdiscard", "mv", "sudoedit":
		return all(ops)
	case "mknod":
		if len(ops) > 0 {
			return all(ops[:1])
		}
	case "cp", "install", "ln", "rsync":
		if t, ok := cmd.value("-t"); ok {
			return all([]Word{t})
		}
		if cmd.Program == "install" && cmd.hasFlag("-d") {
			return all(ops)
		}
		if len(ops) >= 2 {
			last := ops[len(ops)-1]
			if cmd.Program == "rsync" && last.Static && strings.Contains(strings.SplitN(last.Value, "/", 2)[0], ":") {
				return nil // a remote destination
			}
			return all([]Word{last})
		}
		if len(ops) == 1 && cmd.Program == "ln" {
			return all([]Word{{Text: ".", Value: ".", Static: true, Span: ops[0].Span}})
		}
	case "chmod", "chown", "chgrp":
		if _, ok := cmd.value("--reference"); ok {
			return all(ops)
		}
		if len(ops) > 1 {
			return all(ops[1:])
		}
	case "dd":
		var out []Write
		for _, o := range ops {
			if v, ok := strings.CutPrefix(o.Value, "of="); ok {
				w := o
				w.Value = v
				out = append(out, f.write(w, "dd of="))
			}
		}
		return out
	case "sed":
		if !cmd.hasFlag("-i") {
			return nil
		}
		_, e := cmd.value("-e")
		_, fl := cmd.value("-f")
		if !e && !fl && len(ops) > 0 {
			ops = ops[1:]
		}
		how = "sed -i"
		return all(ops)
	case "wget":
		if o, ok := cmd.value("-O"); ok && o.Value != "-" {
			return all([]Word{o})
		}
	case "curl", "sort":
		if o, ok := cmd.value("-o"); ok && o.Value != "-" {
			return all([]Word{o})
		}
	case "script":
		if len(ops) > 0 {
			return all(ops[:1])
		}
	}
	return nil
}
