package web

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// toolGate is what the gate inbox shows of a tool step's gate: the
// definition the gate was judged with (its hash binds the answer), in
// full, and each other definition executors report now beside the
// approved one.
type toolGate struct {
	Tool   string
	Bound  string
	Status plugin.ToolStatus
	// Approved is the pinned definition (nil: none).
	Approved *toolDef
	// Changed are the other definitions executors report now.
	Changed []toolDef
	// Unknown says why the definition cannot be shown ("" when it can).
	Unknown string
}

// toolDef is a definition as the page shows it.
type toolDef struct {
	Hash, Title, Description   string
	Input, Output, Annotations string
	Nodes                      []string
}

func defOf(hash string, d event.ToolDefinition, nodes []string) toolDef {
	return toolDef{Hash: hash, Title: d.Title, Description: d.Description, Input: indentJSON(d.InputSchema),
		Output: indentJSON(d.OutputSchema), Annotations: indentJSON(d.Annotations), Nodes: nodes}
}

func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// toolGates reads, for the tool steps among gates, their plugin's view
// (Source.Plugin) and returns what to show, by gate subject; nil when the
// source cannot tell.
func (s *Server) toolGates(ctx context.Context, gates []apiwire.Gate) map[string]*toolGate {
	if s.src.Plugin == nil {
		return nil
	}
	out := map[string]*toolGate{}
	views := map[string]plugin.View{}
	for _, g := range gates {
		if g.Spec == nil || g.Spec.Kind != event.KindTool {
			continue
		}
		tg := &toolGate{Tool: g.Spec.Tool, Bound: g.ToolHash}
		out[g.Subject] = tg
		pl, _, err := event.SplitToolName(g.Spec.Tool)
		if err != nil {
			tg.Unknown = err.Error()
			continue
		}
		v, ok := views[pl]
		if !ok {
			if v, err = s.src.Plugin(ctx, pl); err != nil {
				tg.Unknown = err.Error()
				continue
			}
			views[pl] = v
		}
		tg.Unknown = "no executor reports it, and it is not approved"
		for _, t := range v.Tools {
			if t.Name != g.Spec.Tool {
				continue
			}
			tg.Unknown, tg.Status = "", t.Status
			if t.Pin != nil {
				d := defOf(t.Pin.Hash, t.Pin.Definition, nil)
				tg.Approved = &d
			}
			for _, r := range t.Reported {
				if r.Definition != nil && (t.Pin == nil || r.Hash != t.Pin.Hash) {
					tg.Changed = append(tg.Changed, defOf(r.Hash, *r.Definition, r.Nodes))
				}
			}
		}
	}
	return out
}
