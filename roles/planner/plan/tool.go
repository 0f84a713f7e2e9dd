package plan

import (
	"encoding/json"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Tool steps (protocol version 8) call a plugin's tool:
//
//	- id: read
//	  kind: tool                       # implied by tool
//	  tool: fs/read_text_file
//	  args: {path: /srv/data/notes.md}
//
// args is a mapping (a JSON object once decoded), at most MaxArgsBytes as
// JSON; whether the tool exists, is approved and accepts the arguments is
// the cluster's to judge when the step runs (docs/plugins.md).

// MaxArgsBytes bounds a tool step's arguments, as JSON.
const MaxArgsBytes = 64 << 10

// toolFields are the fields a tool step may not have: it runs no command.
var toolFields = []string{"run", "check", "creates", "path", "content", "mode", "patch", "compensate", "env"}

// toolField decodes the tool fields of a step (tool, args).
func (w *walker) toolField(s *draftStep, name string, n *yaml.Node, p pos) (ok bool) {
	switch name {
	case "tool":
		s.step.Tool, ok = w.str(n, p)
	case "args":
		r := w.resolve(n)
		if r == nil || r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
			s.step.Args = json.RawMessage("{}")
			return true
		}
		if r.Kind != yaml.MappingNode {
			w.ps.add(p, "args must be a mapping of argument names to values, e.g. args: {path: /srv/data/notes.md}")
			return false
		}
		var v map[string]any
		if err := r.Decode(&v); err != nil {
			w.ps.add(p, "args: %v", err)
			return false
		}
		b, err := json.Marshal(v)
		if err != nil {
			w.ps.add(p, "args cannot be written as JSON: %v (keys must be strings; values strings, numbers, booleans, lists or mappings)", err)
			return false
		}
		if len(b) > MaxArgsBytes {
			w.ps.add(p, "args are %d bytes as JSON; the limit is %d", len(b), MaxArgsBytes)
			return false
		}
		s.step.Args, ok = b, true
	}
	return ok
}

// checkTool reports the problems of a step's tool fields: a tool step
// needs a tool named plugin/tool and has none of the fields of a command;
// another kind has neither tool nor args.
func checkTool(ps *problems, s *draftStep, kind event.StepKind) {
	st := &s.step
	given := func(name string, set bool) bool {
		_, written := s.field[name]
		return s.ok(name) && (written || set)
	}
	if kind != event.KindTool {
		for _, f := range []struct {
			name string
			set  bool
		}{{"tool", st.Tool != ""}, {"args", len(st.Args) > 0}} {
			if given(f.name, f.set) {
				ps.add(s.pos(f.name), "%s step has %s; %s belongs to tool steps (kind: tool)", kind, f.name, f.name)
			}
		}
		return
	}
	switch {
	case s.blank("tool", st.Tool), st.Tool == "" && s.ok("tool"):
		ps.add(s.pos("tool"), "tool step needs tool: the plugin's tool to call, as plugin/tool (fs/read_text_file)")
	case st.Tool != "":
		if _, _, err := event.SplitToolName(st.Tool); err != nil {
			ps.add(s.pos("tool"), "%v", err)
		}
	}
	if len(st.Args) == 0 {
		st.Args = json.RawMessage("{}")
	}
	checkSecret(ps, s.pos("args"), "args", string(st.Args))
	for _, f := range toolFields {
		if _, written := s.field[f]; written {
			ps.add(s.pos(f), "tool step has %s; a tool step calls a tool and runs no command (remove %s, or make it a shell step)", f, f)
		}
	}
}
