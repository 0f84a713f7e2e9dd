package plugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Errors of Check and of the fold. Each names what to do in its message.
var (
	// ErrUnknownPlugin: no plugin of that name is in force.
	ErrUnknownPlugin = errors.New("plugin: unknown plugin")
	// ErrNotApproved: the tool's definition is not pinned.
	ErrNotApproved = errors.New("plugin: tool not approved")
	// ErrChanged: the server reports a definition other than the pinned
	// one (a rug pull, or an upgrade): refused until re-approved.
	ErrChanged = errors.New("plugin: tool definition changed since it was approved")
	// ErrIgnored: an event the fold does not take (logged by callers).
	ErrIgnored = errors.New("plugin: event ignored")
)

// State is the fold of the plugin events and of the tools executors
// report. The zero value is the empty state. It is not safe for
// concurrent use: one goroutine folds, readers take a Clone.
type State struct {
	// Plugins in force, by name.
	Plugins map[string]*Plugin `json:"plugins,omitempty"`
	// Executors' latest reports, by node id.
	Executors map[string]*Executor `json:"executors,omitempty"`
}

// Plugin is one plugin in force.
type Plugin struct {
	Manifest     event.PluginManifest `json:"manifest"`
	ManifestHash string               `json:"manifest_hash"`
	// Added is the plugin.added in force.
	Added Stamp `json:"added"`
	// Approved is the plugin.approved in force, if any; Pins its
	// definitions by tool name (without the plugin).
	Approved *Stamp                   `json:"approved,omitempty"`
	Pins     map[string]event.ToolPin `json:"pins,omitempty"`
}

// Stamp says who did what, when and where in the ledger.
type Stamp struct {
	By     string    `json:"by"`
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Event  string    `json:"event"`
	Reason string    `json:"reason,omitempty"`
}

// Executor is an executor's latest executor.online, as far as plugins go.
type Executor struct {
	Node        string               `json:"node"`
	Incarnation string               `json:"incarnation"`
	Seq         uint64               `json:"seq"`
	Time        time.Time            `json:"time"`
	Tools       []event.ToolReport   `json:"tools,omitempty"`
	Plugins     []event.PluginReport `json:"plugins,omitempty"`
}

// Apply folds ev. Events of other types are no-ops (nil). An event the
// fold does not take returns an error wrapping ErrIgnored that says why;
// the state is then unchanged.
func (s *State) Apply(ev event.Event) error {
	switch ev.Type {
	case event.PluginAdded:
		return s.added(ev)
	case event.PluginApproved:
		return s.approved(ev)
	case event.PluginRemoved:
		return s.removed(ev)
	case event.ExecutorOnline:
		return s.online(ev)
	case event.NodeFailed, event.NodeLeft:
		var d event.NodeData
		if err := ev.Decode(&d); err == nil {
			delete(s.Executors, d.Node)
		}
	}
	return nil
}

func stamp(ev event.Event, reason string) Stamp {
	return Stamp{By: ev.Node, Seq: ev.Seq, Time: ev.Time.UTC(), Event: ev.ID, Reason: reason}
}

func ignored(ev event.Event, format string, a ...any) error {
	return fmt.Errorf("%w: %s %s (seq %d): %s", ErrIgnored, ev.Type, ev.ID, ev.Seq, fmt.Sprintf(format, a...))
}

func (s *State) added(ev event.Event) error {
	var d event.PluginAddedData
	if err := ev.Decode(&d); err != nil {
		return ignored(ev, "%v", err)
	}
	if err := Validate(d.Manifest); err != nil {
		return ignored(ev, "invalid manifest: %v", err)
	}
	h := ManifestHash(d.Manifest)
	if s.Plugins == nil {
		s.Plugins = map[string]*Plugin{}
	}
	if old := s.Plugins[d.Manifest.Name]; old != nil && old.ManifestHash == h {
		return nil // the same manifest again: pins stay
	}
	s.Plugins[d.Manifest.Name] = &Plugin{Manifest: d.Manifest, ManifestHash: h, Added: stamp(ev, d.Reason)}
	return nil
}

func (s *State) approved(ev event.Event) error {
	var d event.PluginApprovedData
	if err := ev.Decode(&d); err != nil {
		return ignored(ev, "%v", err)
	}
	p := s.Plugins[d.Plugin]
	switch {
	case p == nil:
		return ignored(ev, "no plugin %q is in force", d.Plugin)
	case d.Manifest != p.ManifestHash:
		return ignored(ev, "it approves manifest %s of %s, and %s is in force", d.Manifest, d.Plugin, p.ManifestHash)
	}
	pins := make(map[string]event.ToolPin, len(d.Tools))
	for _, t := range d.Tools {
		h, err := DefinitionHash(t.Definition)
		if err != nil {
			return ignored(ev, "%v", err)
		}
		if h != t.Hash {
			return ignored(ev, "tool %q: pinned hash %s is not its definition's (%s)", t.Definition.Name, t.Hash, h)
		}
		if _, dup := pins[t.Definition.Name]; dup {
			return ignored(ev, "tool %q pinned twice", t.Definition.Name)
		}
		pins[t.Definition.Name] = t
	}
	st := stamp(ev, d.Reason)
	p.Approved, p.Pins = &st, pins
	return nil
}

func (s *State) removed(ev event.Event) error {
	var d event.PluginRemovedData
	if err := ev.Decode(&d); err != nil {
		return ignored(ev, "%v", err)
	}
	if s.Plugins[d.Plugin] == nil {
		return ignored(ev, "no plugin %q is in force", d.Plugin)
	}
	delete(s.Plugins, d.Plugin)
	return nil
}

func (s *State) online(ev event.Event) error {
	var d event.ExecutorOnlineData
	if err := ev.Decode(&d); err != nil {
		return ignored(ev, "%v", err)
	}
	if len(d.Tools) == 0 && len(d.Plugins) == 0 {
		delete(s.Executors, ev.Node)
		return nil
	}
	if s.Executors == nil {
		s.Executors = map[string]*Executor{}
	}
	s.Executors[ev.Node] = &Executor{Node: ev.Node, Incarnation: d.Incarnation, Seq: ev.Seq, Time: ev.Time.UTC(),
		Tools: d.Tools, Plugins: d.Plugins}
	return nil
}

// Check says whether the tool named "plugin/tool" may run with the
// definition whose hash its server reports now: nil, or an error wrapping
// ErrUnknownPlugin, ErrNotApproved or ErrChanged that says what to do.
func (s *State) Check(name, hash string) error {
	plugin, tool, err := event.SplitToolName(name)
	if err != nil {
		return err
	}
	p := s.Plugins[plugin]
	if p == nil {
		return fmt.Errorf("%w: %q (tool %s): add it with agentctl plugin add -f MANIFEST", ErrUnknownPlugin, plugin, name)
	}
	return p.Check(tool, hash)
}

// Check says whether tool (its own name) may run with the definition whose
// hash is hash, as Plugin's pins say.
func (p *Plugin) Check(tool, hash string) error {
	name := p.Manifest.Name + "/" + tool
	pin, ok := p.Pins[tool]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s: its definition was never approved: review it with agentctl plugin show %s, then agentctl plugin approve %s",
			ErrNotApproved, name, p.Manifest.Name, p.Manifest.Name)
	case hash != pin.Hash:
		return fmt.Errorf("%w: %s: the server now reports definition %s, %s was approved: compare them with agentctl plugin show %s, then agentctl plugin approve %s",
			ErrChanged, name, hash, pin.Hash, p.Manifest.Name, p.Manifest.Name)
	}
	return nil
}

// Reported is one tool definition as executors report it for the
// manifest in force.
type Reported struct {
	// Name is the tool's own name.
	Name string `json:"name"`
	Hash string `json:"hash"`
	// Definition is the reported definition; nil when no report carried
	// it.
	Definition *event.ToolDefinition `json:"definition,omitempty"`
	// Nodes are the executors that report this hash, sorted.
	Nodes []string `json:"nodes"`
}

// Reported returns the definitions executors report for plugin's tools,
// started from the manifest in force: by tool name, then hash (several
// hashes of one tool mean its executors disagree).
func (s *State) Reported(plugin string) []Reported {
	p := s.Plugins[plugin]
	if p == nil {
		return nil
	}
	byKey := map[string]*Reported{}
	for _, node := range slices.Sorted(maps.Keys(s.Executors)) {
		x := s.Executors[node]
		if !slices.ContainsFunc(x.Plugins, func(r event.PluginReport) bool {
			return r.Plugin == plugin && r.Manifest == p.ManifestHash && r.Error == ""
		}) {
			continue
		}
		for _, t := range x.Tools {
			pl, tool, err := event.SplitToolName(t.Name)
			if err != nil || pl != plugin {
				continue
			}
			k := tool + "\x00" + t.Hash
			r := byKey[k]
			if r == nil {
				r = &Reported{Name: tool, Hash: t.Hash}
				byKey[k] = r
			}
			if r.Definition == nil && t.Definition != nil {
				if h, err := DefinitionHash(*t.Definition); err == nil && h == t.Hash {
					r.Definition = t.Definition
				}
			}
			if !slices.Contains(r.Nodes, node) {
				r.Nodes = append(r.Nodes, node)
			}
		}
	}
	out := make([]Reported, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Hash < out[j].Hash
	})
	return out
}

// Clone returns a deep enough copy for readers: maps and the structs
// they point to are copied; manifests, pins and reports are shared and
// never changed in place.
func (s *State) Clone() *State {
	c := &State{}
	if s.Plugins != nil {
		c.Plugins = make(map[string]*Plugin, len(s.Plugins))
		for k, p := range s.Plugins {
			cp := *p
			c.Plugins[k] = &cp
		}
	}
	if s.Executors != nil {
		c.Executors = make(map[string]*Executor, len(s.Executors))
		for k, x := range s.Executors {
			cx := *x
			c.Executors[k] = &cx
		}
	}
	return c
}
