package plan

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// walker turns yaml.v3 nodes into typed values, reporting every problem
// with the node's line and column. It follows aliases and merge keys, with
// a budget of visited nodes so that aliases cannot blow a small file up.
type walker struct {
	ps        *problems
	visits    int
	exhausted bool
}

// entry is one key of a mapping.
type entry struct {
	name     string
	key, val *yaml.Node
}

// at is the position of node n under path.
func at(n *yaml.Node, path string) pos { return pos{path: path, line: n.Line, col: n.Column} }

// resolve follows aliases and counts the visit against the budget. It
// returns nil once the budget is spent.
func (w *walker) resolve(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode && hops < 64; hops++ {
		n = n.Alias
	}
	if w.visits++; w.visits > maxVisits {
		if !w.exhausted {
			w.exhausted = true
			w.ps.add(pos{}, "document too complex: more than %d nodes once aliases are expanded", maxVisits)
		}
		return nil
	}
	if n == nil || n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// mapping returns the entries of a mapping in document order, the keys
// merged in with "<<" after the explicit ones (which win). It reports a
// node that is not a mapping, keys that are not strings, duplicate keys and
// keys outside allowed (nil allows any key). ok is false when n is not a
// mapping at all.
func (w *walker) mapping(n *yaml.Node, p pos, allowed []string) (entries []entry, ok bool) {
	return w.mappingDepth(n, p, allowed, 0)
}

func (w *walker) mappingDepth(n *yaml.Node, p pos, allowed []string, depth int) ([]entry, bool) {
	n = w.resolve(n)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.MappingNode {
		w.ps.add(p, "must be a mapping, got %s", describe(n))
		return nil, false
	}
	var out, merged []entry
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, w.merge(v, p, allowed, depth)...)
			continue
		}
		if k = w.resolve(k); k == nil {
			return out, true
		}
		if k.Kind != yaml.ScalarNode {
			w.ps.add(at(k, p.path), "keys must be strings, got %s", describe(k))
			continue
		}
		name := k.Value
		if first, dup := keys[name]; dup {
			w.ps.add(at(k, p.child(name).path), "duplicate key %q (first at line %d:%d)", name, first.Line, first.Column)
			continue
		}
		keys[name] = k
		if allowed != nil && !slices.Contains(allowed, name) {
			w.ps.add(at(k, p.child(name).path), "unknown field %q%s; allowed: %s", name, w.hint(name, allowed), strings.Join(allowed, ", "))
			continue
		}
		out = append(out, entry{name: name, key: k, val: v})
	}
	for _, e := range merged {
		if _, explicit := keys[e.name]; !explicit {
			keys[e.name] = e.key
			out = append(out, e)
		}
	}
	return out, true
}

// merge returns the entries a "<<" key brings in: one mapping, or a list of
// mappings where earlier ones win.
func (w *walker) merge(v *yaml.Node, p pos, allowed []string, depth int) []entry {
	if depth >= 8 {
		w.ps.add(at(v, p.path), "merge keys (<<) nested too deeply")
		return nil
	}
	if v = w.resolve(v); v == nil {
		return nil
	}
	var srcs []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		srcs = []*yaml.Node{v}
	case yaml.SequenceNode:
		srcs = v.Content
	default:
		w.ps.add(at(v, p.path), "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(v))
		return nil
	}
	var out []entry
	seen := map[string]bool{}
	for _, src := range srcs {
		es, _ := w.mappingDepth(src, at(src, p.path), allowed, depth+1)
		for _, e := range es {
			if !seen[e.name] {
				seen[e.name] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// hint explains an unknown field: a likely typo, or where the thing it
// probably means goes.
func (w *walker) hint(name string, allowed []string) string {
	if s := w.ps.suggest(name, allowed); s != "" {
		return s
	}
	switch strings.ToLower(name) {
	case "command", "cmd", "shell", "script", "exec":
		if slices.Contains(allowed, "run") {
			return ` (the command goes in "run")`
		}
	case "needs", "deps", "after", "requires", "dependencies", "depends":
		if slices.Contains(allowed, "depends_on") {
			return ` (dependencies go in "depends_on")`
		}
	case "commands":
		if slices.Contains(allowed, "run") {
			return ` ("commands" belongs to the seed format, which starts with "mode": "plan")`
		}
	}
	return ""
}
