package plan

import (
	"path"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/fileedit"
)

// Limits on file edits. A step travels inside one event (plan.proposed
// holds the whole plan, task.assigned the step), and an event is at most
// envelope.MaxEventBytes (640 KiB) once signed.
const (
	// MaxEditBytes caps a file.write's content and a file.patch's patch.
	MaxEditBytes = 256 << 10
	// MaxPlanEditBytes caps the contents and patches of all the steps of
	// a plan together.
	MaxPlanEditBytes = 512 << 10
	// MaxUserLen caps run_as.
	MaxUserLen = 32
)

// checkFileFields reports the problems of the fields of file edits,
// compensate and run_as: each belongs to its kinds, and holds what the
// executor can use.
func checkFileFields(ps *problems, s *draftStep, kind event.StepKind) {
	st := &s.step
	file := kind == event.KindFileWrite || kind == event.KindFilePatch
	given := func(name, v string) bool {
		_, written := s.field[name]
		return s.ok(name) && (written || v != "")
	}
	switch kind {
	case event.KindFileWrite:
		switch {
		case s.blank("path", st.Path):
			ps.add(s.pos("path"), "path is empty: give the file to write, relative to cwd")
		case st.Path == "" && s.ok("path"):
			ps.add(s.pos("path"), "file.write step needs path: the file to write (content is what it writes)")
		case strings.IndexByte(st.Path, 0) >= 0:
			ps.add(s.pos("path"), "path contains a NUL byte")
		case escapes(st.Path):
			ps.add(s.pos("path"), "path %s leaves cwd with ..; the executor refuses it: set cwd, or give the path from there", st.Path)
		}
		if len(st.Content) > MaxEditBytes {
			ps.add(s.pos("content"), "content is %d bytes; the limit is %d (a step travels inside one event)", len(st.Content), MaxEditBytes)
		}
		if s.ok("mode") {
			if _, err := fileedit.ParseMode(st.Mode); err != nil {
				ps.add(s.pos("mode"), "%v", err)
			}
		}
		if given("patch", st.Patch) {
			ps.add(s.pos("patch"), "file.write step has patch; a step writes a file (path, content) or applies a patch (kind: file.patch), not both")
		}
	case event.KindFilePatch:
		switch {
		case s.blank("patch", st.Patch):
			ps.add(s.pos("patch"), "patch is empty: give a unified diff (git diff or diff -u)")
		case st.Patch == "" && s.ok("patch"):
			ps.add(s.pos("patch"), "file.patch step needs patch: a unified diff (git diff or diff -u)")
		case len(st.Patch) > MaxEditBytes:
			ps.add(s.pos("patch"), "patch is %d bytes; the limit is %d (a step travels inside one event)", len(st.Patch), MaxEditBytes)
		default:
			files, err := fileedit.ParsePatch(st.Patch)
			if err != nil {
				ps.add(s.pos("patch"), "%v", err)
			}
			for _, f := range files {
				if escapes(f.Path) {
					ps.add(s.pos("patch"), "patch changes %s, which leaves cwd with ..; the executor refuses it: set cwd, or name the file from there", f.Path)
				}
			}
		}
		for _, f := range []struct{ name, v string }{{"path", st.Path}, {"content", st.Content}, {"mode", st.Mode}} {
			if given(f.name, f.v) {
				ps.add(s.pos(f.name), "file.patch step has %s; a patch names its files itself: remove %s", f.name, f.name)
			}
		}
	default:
		for _, f := range []struct{ name, v string }{{"path", st.Path}, {"content", st.Content}, {"mode", st.Mode}, {"patch", st.Patch}} {
			if given(f.name, f.v) {
				ps.add(s.pos(f.name), "%s step has %s; %s belongs to file edits (kind: file.write or file.patch)", kind, f.name, f.name)
			}
		}
	}
	if file {
		if st.Run != "" && s.ok("run") {
			ps.add(s.pos("run"), "%s step has run; a step runs a command (kind: shell) or edits files, not both", kind)
		}
		for _, f := range []struct{ name, v string }{{"creates", st.Creates}, {"check", st.Check}} {
			if given(f.name, f.v) {
				ps.add(s.pos(f.name), "%s step has %s; file edits need no guard: applying one again changes nothing", kind, f.name)
			}
		}
	}
	switch {
	case s.blank("compensate", st.Compensate):
		ps.add(s.pos("compensate"), "compensate is empty: give the command that undoes the step, or remove compensate")
	case st.Compensate != "" && file:
		ps.add(s.pos("compensate"), "%s step has compensate; file edits are undone by restoring their before-images: remove compensate", kind)
	case st.Compensate != "" && kind != event.KindShell:
		ps.add(s.pos("compensate"), "%s step has compensate; only shell steps have a compensating command", kind)
	}
	checkCommand(ps, s.pos("compensate"), "compensate", st.Compensate)
	switch {
	case s.blank("run_as", st.RunAs):
		ps.add(s.pos("run_as"), "run_as is empty: give a user name, or remove run_as for the executor's default")
	case st.RunAs != "" && kind != event.KindShell:
		ps.add(s.pos("run_as"), "%s step has run_as; only shell steps run as another user", kind)
	case st.RunAs != "" && !validUser(st.RunAs):
		ps.add(s.pos("run_as"), "run_as %q is not a user name (letters, digits, '_', '-', '.', at most %d bytes, not starting with '-') or a numeric uid", st.RunAs, MaxUserLen)
	}
}

// escapes reports whether a relative path leaves its directory with "..".
func escapes(p string) bool {
	if path.IsAbs(p) {
		return false
	}
	c := path.Clean(p)
	return c == ".." || strings.HasPrefix(c, "../")
}

// checkEditBytes reports a plan whose contents and patches together would
// not fit the event it travels in.
func checkEditBytes(d *draft, ps *problems) {
	total := 0
	for _, s := range d.steps {
		total += len(s.step.Content) + len(s.step.Patch)
	}
	if total > MaxPlanEditBytes {
		ps.add(d.root, "the plan's file contents and patches are %d bytes together; the limit is %d (a plan travels inside one event): split it into several plans", total, MaxPlanEditBytes)
	}
}

// validUser reports whether u may name a user: a POSIX-portable name
// (letters, digits, '_', '-', '.'; not starting with '-'; a trailing '$'
// for machine accounts), or a numeric uid.
func validUser(u string) bool {
	if u == "" || len(u) > MaxUserLen || u[0] == '-' {
		return false
	}
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		case c == '$' && i == len(u)-1 && i > 0:
		default:
			return false
		}
	}
	return true
}
