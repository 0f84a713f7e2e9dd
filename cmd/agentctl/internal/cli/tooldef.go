package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// printGateTool prints, under a tool step's gate, the tool's definition
// the gate was judged with (bound: its hash; "" for a gate opened before
// definitions were bound) — description and schemas whole — and, when
// executors report another definition now, the two side by side (best
// effort: nothing but a line when the plugin cannot be read).
func (a *app) printGateTool(w io.Writer, name, bound string) {
	pl, _, err := event.SplitToolName(name)
	if err != nil {
		return
	}
	v, err := a.pluginShow(a.context(), pl)
	if err != nil {
		fmt.Fprintf(w, "definition  unknown: %v\n", err)
		return
	}
	for _, t := range v.Tools {
		if t.Name == name {
			writeGateTool(w, t, bound)
			return
		}
	}
	fmt.Fprintf(w, "definition  no executor reports %s\n", name)
}

// writeGateTool writes what printGateTool prints of tool t.
func writeGateTool(w io.Writer, t plugin.ToolView, bound string) {
	fmt.Fprintf(w, "definition  %s\n", t.Status)
	if bound != "" {
		fmt.Fprintf(w, "  judged with %s: an answer counts for it only\n", bound)
	}
	if t.Pin == nil {
		for _, r := range t.Reported {
			if r.Definition != nil {
				fmt.Fprintf(w, "  reported by %s (%s), never approved:\n", strings.Join(r.Nodes, ", "), r.Hash)
				printDefinition(w, *r.Definition)
			}
		}
		return
	}
	changed := false
	for _, r := range t.Reported {
		if r.Hash == t.Pin.Hash || r.Definition == nil {
			continue
		}
		changed = true
		fmt.Fprintf(w, "  changed: the approved definition (left) beside the one %s reports now (right); lines that differ are marked |\n",
			strings.Join(r.Nodes, ", "))
		sideBySide(w, "approved "+t.Pin.Hash, t.Pin.Definition, "reported "+r.Hash, *r.Definition)
	}
	if !changed {
		fmt.Fprintf(w, "  approved (%s):\n", t.Pin.Hash)
		printDefinition(w, t.Pin.Definition)
	}
}

// defColumn is the width of one column of sideBySide, in characters.
const defColumn = 60

// sideBySide writes two tool definitions in two columns — title,
// description whole, schemas and annotations as indented JSON — wrapped
// at defColumn, each part beside the same part of the other, a '|'
// between the lines that differ.
func sideBySide(w io.Writer, leftTitle string, left event.ToolDefinition, rightTitle string, right event.ToolDefinition) {
	l, r := definitionParts(left), definitionParts(right)
	fmt.Fprintf(w, "    %-*s   %s\n", defColumn, cut(leftTitle, defColumn), cut(rightTitle, defColumn))
	for part := range l {
		a, b := l[part], r[part]
		for i := 0; i < max(len(a), len(b)); i++ {
			var x, y string
			if i < len(a) {
				x = a[i]
			}
			if i < len(b) {
				y = b[i]
			}
			mark := " "
			if x != y {
				mark = "|"
			}
			fmt.Fprintf(w, "    %s%s %s %s\n", x, strings.Repeat(" ", defColumn-utf8.RuneCountInString(x)), mark, y)
		}
	}
}

// definitionParts renders d as lines of at most defColumn characters,
// part by part: title, description, input, output, annotations (a part
// d lacks has no lines).
func definitionParts(d event.ToolDefinition) [5][]string {
	var out [5][]string
	add := func(part int, label, text string) {
		for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if i == 0 {
				line = label + line
			} else {
				line = strings.Repeat(" ", len(label)) + line
			}
			out[part] = append(out[part], wrap(line, defColumn)...)
		}
	}
	if d.Title != "" {
		add(0, "title: ", d.Title)
	}
	add(1, "description: ", d.Description)
	for i, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"input: ", d.InputSchema}, {"output: ", d.OutputSchema}, {"annotations: ", d.Annotations}} {
		if len(f.raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if json.Indent(&b, f.raw, "", "  ") != nil {
			b.Reset()
			b.Write(f.raw)
		}
		add(2+i, f.name, b.String())
	}
	return out
}

// wrap cuts s into pieces of at most n characters, at a space when one
// lies in the second half of a piece.
func wrap(s string, n int) []string {
	var out []string
	for utf8.RuneCountInString(s) > n {
		i, c, space := 0, 0, -1
		for c < n {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			c++
			if r == ' ' && c > n/2 {
				space = i
			}
		}
		if space > 0 {
			i = space
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

// cut is s, at most n characters.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return wrap(s, n-1)[0] + "…"
}
