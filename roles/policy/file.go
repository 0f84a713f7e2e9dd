package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/fileedit"
	"github.com/agentic-dev/agentic/roles/policy/shell"
)

// JudgeEdit judges a file.write or file.patch step that runs in dir (its
// working directory, "" when unknown) — any other kind is judged as its
// command, by JudgeIn. An edit is judged as one command whose program is
// its kind and whose writes are the files it writes (a patch's every file,
// deleted ones included), so the rules and the file scope apply as they
// do to commands: a rule naming command file.write (or file.*), or
// writes globs matching a path, decides; a path outside scopes.files gets
// scopes.outside's level; no rule, the default action. A patch that does
// not parse, or a write without a path, cannot be judged: it gets the
// unresolved action at level high. The verdict's Command is the edit
// described ("file.write etc/app.conf"); the gate shows the diff
// (fileedit.DryRun) beside it.
func (p *Policy) JudgeEdit(s event.Step, dir string) Verdict {
	if s.Kind != event.KindFileWrite && s.Kind != event.KindFilePatch {
		return p.JudgeIn(s.Run, dir)
	}
	c := editCommand(s, dir)
	j := judging{p: p, src: c.Text, dir: path.Clean(dir)}
	if dir == "" {
		j.dir = ""
	}
	v := Verdict{Command: c.Text, Policy: p.Ref(), Action: p.Default, Level: Low, Rule: RuleDefault, Reversible: true,
		Findings: []Finding{}, Highlights: []Highlight{}}
	f, notable := j.command(&c)
	if notable {
		v.Findings = append(v.Findings, f)
		v.Action, v.Level, v.Rule, v.Why, v.Unresolved = f.Action, f.Level, f.Rule, f.Why, f.Unresolved
		v.Reversible = !(f.Irreversible && f.Action == Confirm)
	} else {
		v.Why = fmt.Sprintf("no rule names %s: the default action applies", c.Program)
	}
	if v.Action == Confirm {
		a := p.Approvals[v.Level]
		v.Approvals, v.NotSubmitter = a.Approvers, a.NotSubmitter
		if !v.Reversible {
			v.Approvals += p.IrreversibleExtra
		}
	}
	v.Highlights = mergeHighlights(j.highlights)
	return v
}

// editCommand describes a file edit as the command the judge sees:
// program file.write or file.patch, one write per file, located in Text;
// a relative path is joined with dir when dir is known, so that rules
// naming absolute globs see where the edit writes.
func editCommand(s event.Step, dir string) shell.Command {
	kind := string(s.Kind)
	var b strings.Builder
	b.WriteString(kind)
	c := shell.Command{Program: kind, ProgramSpan: shell.Span{Start: 0, End: len(kind)}}
	add := func(p, how string) {
		b.WriteByte(' ')
		start := b.Len()
		b.WriteString(p)
		target := path.Clean(p)
		if dir != "" && !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		c.Writes = append(c.Writes, shell.Write{Path: target, Text: p, Known: true, How: how,
			Span: shell.Span{Start: start, End: b.Len()}})
	}
	opaque := func(why string) {
		c.Opaque, c.OpaqueSpan = why, shell.Span{Start: 0, End: b.Len()}
	}
	switch s.Kind {
	case event.KindFileWrite:
		if strings.TrimSpace(s.Path) == "" {
			opaque("the file it writes is not given")
			break
		}
		add(s.Path, kind)
	case event.KindFilePatch:
		files, err := fileedit.ParsePatch(s.Patch)
		if err != nil {
			opaque(err.Error())
			break
		}
		for _, f := range files {
			how := kind
			if f.Delete {
				how = kind + " (deletes)"
			}
			add(f.Path, how)
		}
	}
	c.Text = b.String()
	c.Span = shell.Span{Start: 0, End: len(c.Text)}
	if c.Opaque != "" {
		c.OpaqueSpan.End = len(c.Text)
	}
	return c
}

// AllowsWrite reports whether the file scope names target, a path
// written by a step that runs in dir: what an executor asks before it
// edits an absolute path outside the step's working directory
// (fileedit.Options.AllowAbsolute). A policy without a file scope allows
// no such path.
func (p *Policy) AllowsWrite(target, dir string) bool {
	if len(p.Scopes.Files) == 0 {
		return false
	}
	j := judging{p: p, dir: path.Clean(dir)}
	if dir == "" {
		j.dir = ""
	}
	ok, _ := j.inScope(shell.Write{Path: path.Clean(target), Text: target, Known: true, How: "write"})
	return ok
}
