package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// str decodes a scalar as text. Any scalar is accepted as written (so
// "run: true" is the command true); null is "".
func (w *walker) str(n *yaml.Node, p pos) (string, bool) {
	if n = w.resolve(n); n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		w.ps.add(p, "must be a string, got %s", describe(n))
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

// integer decodes an integer scalar.
func (w *walker) integer(n *yaml.Node, p pos) (int, bool) {
	if n = w.resolve(n); n == nil {
		return 0, false
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		w.ps.add(p, "must be an integer, got %s", describe(n))
		return 0, false
	}
	return v, true
}

// boolean decodes true or false.
func (w *walker) boolean(n *yaml.Node, p pos) (bool, bool) {
	if n = w.resolve(n); n == nil {
		return false, false
	}
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		w.ps.add(p, "must be true or false, got %s", describe(n))
		return false, false
	}
	return v, true
}

// duration decodes a Go duration string ("30s", "1m30s") or a whole number
// of seconds: the authoring syntax, which differs from the wire's (always a
// string, see event.Duration). null is 0. A negative duration decodes; the
// checks report it.
func (w *walker) duration(n *yaml.Node, p pos) (event.Duration, bool) {
	if n = w.resolve(n); n == nil {
		return 0, false
	}
	const syntax = `use a duration like "30s", "5m" or "1h30m", or a number of seconds`
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return 0, true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!int":
		var secs int64
		if n.Decode(&secs) != nil || secs > math.MaxInt64/int64(time.Second) || secs < math.MinInt64/int64(time.Second) {
			w.ps.add(p, "duration %s is out of range", n.Value)
			return 0, false
		}
		return event.Duration(time.Duration(secs) * time.Second), true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			w.ps.add(p, "bad duration %q: %s", n.Value, syntax)
			return 0, false
		}
		return event.Duration(d), true
	default:
		w.ps.add(p, "bad duration: got %s; %s", describe(n), syntax)
		return 0, false
	}
}

// refs decodes a list of ids, or a single id.
func (w *walker) refs(n *yaml.Node, p pos) ([]ref, bool) {
	if n = w.resolve(n); n == nil {
		return nil, false
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, true
	case n.Kind == yaml.ScalarNode:
		return []ref{{id: n.Value, at: p}}, true
	case n.Kind != yaml.SequenceNode:
		w.ps.add(p, "must be a list of ids, got %s", describe(n))
		return nil, false
	}
	out := make([]ref, 0, len(n.Content))
	ok := true
	for j, c := range n.Content {
		cp := at(c, p.index(j).path)
		id, good := w.str(c, cp)
		if !good {
			ok = false
			continue
		}
		out = append(out, ref{id: id, at: cp})
	}
	return out, ok
}

// list returns the elements of a sequence; null is an empty list.
func (w *walker) list(n *yaml.Node, p pos, example string) ([]*yaml.Node, bool) {
	if n = w.resolve(n); n == nil {
		return nil, false
	}
	switch {
	case n.Kind == yaml.SequenceNode:
		return n.Content, true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, true
	default:
		w.ps.add(p, "must be a list (%s), got %s", example, describe(n))
		return nil, false
	}
}

// describe names what a node is, for "got ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean (" + v + ")"
	case "!!int", "!!float":
		return "a number (" + v + ")"
	case "!!str":
		return fmt.Sprintf("a string (%q)", v)
	default:
		return fmt.Sprintf("%s (%q)", n.Tag, v)
	}
}

// mode decodes a file mode as written: octal digits, quoted or not
// (mode: 0644, mode: "0600"), like chmod's; the checks parse it. null is
// "".
func (w *walker) mode(n *yaml.Node, p pos) (string, bool) {
	if n = w.resolve(n); n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		w.ps.add(p, "mode must be octal permission bits such as 0644, got %s", describe(n))
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}
