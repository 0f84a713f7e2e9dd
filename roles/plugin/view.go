package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// ToolStatus says where a tool stands, as View shows it.
type ToolStatus string

// Tool statuses.
const (
	// ToolApproved: pinned, and every executor that reports it reports
	// the pinned definition.
	ToolApproved ToolStatus = "approved"
	// ToolUnapproved: reported, never pinned: refused until approved.
	ToolUnapproved ToolStatus = "unapproved"
	// ToolChanged: an executor reports a definition other than the pinned
	// one (a rug pull, or an upgrade): refused there until re-approved.
	ToolChanged ToolStatus = "changed"
	// ToolUnreported: pinned, but no executor reports it now.
	ToolUnreported ToolStatus = "unreported"
)

// View is one plugin as `agentctl plugin ls|show` and the query methods
// plugins.list and plugins.show give it: its manifest, who added and
// approved it, and each tool's pin beside what executors report now.
type View struct {
	Name         string               `json:"name"`
	Manifest     event.PluginManifest `json:"manifest"`
	ManifestHash string               `json:"manifest_hash"`
	Added        Stamp                `json:"added"`
	Approved     *Stamp               `json:"approved,omitempty"`
	// Tools, by name.
	Tools []ToolView `json:"tools"`
	// Executors say where the plugin's server runs, or why not.
	Executors []ExecutorView `json:"executors"`
}

// ToolView is one tool of a View.
type ToolView struct {
	// Name is "plugin/tool".
	Name   string     `json:"name"`
	Status ToolStatus `json:"status"`
	// Pin is the pinned definition, if any.
	Pin *event.ToolPin `json:"pin,omitempty"`
	// Reported are the definitions executors report, one per hash.
	Reported []Reported `json:"reported,omitempty"`
}

// ExecutorView is how the plugin's server fares on one executor.
type ExecutorView struct {
	Node string `json:"node"`
	User string `json:"user,omitempty"`
	// Current says it runs the manifest in force.
	Current bool   `json:"current"`
	Error   string `json:"error,omitempty"`
}

// Names returns the names of the plugins in force, sorted.
func (s *State) Names() []string { return slices.Sorted(maps.Keys(s.Plugins)) }

// View returns the plugin named name, or false.
func (s *State) View(name string) (View, bool) {
	p := s.Plugins[name]
	if p == nil {
		return View{}, false
	}
	v := View{Name: name, Manifest: p.Manifest, ManifestHash: p.ManifestHash, Added: p.Added, Approved: p.Approved}
	byTool := map[string]*ToolView{}
	tv := func(tool string) *ToolView {
		t := byTool[tool]
		if t == nil {
			t = &ToolView{Name: name + "/" + tool}
			byTool[tool] = t
		}
		return t
	}
	for tool, pin := range p.Pins {
		tv(tool).Pin = &pin
	}
	for _, r := range s.Reported(name) {
		t := tv(r.Name)
		t.Reported = append(t.Reported, r)
	}
	for _, tool := range slices.Sorted(maps.Keys(byTool)) {
		t := byTool[tool]
		switch {
		case t.Pin == nil:
			t.Status = ToolUnapproved
		case len(t.Reported) == 0:
			t.Status = ToolUnreported
		case slices.ContainsFunc(t.Reported, func(r Reported) bool { return r.Hash != t.Pin.Hash }):
			t.Status = ToolChanged
		default:
			t.Status = ToolApproved
		}
		v.Tools = append(v.Tools, *t)
	}
	for _, node := range slices.Sorted(maps.Keys(s.Executors)) {
		for _, r := range s.Executors[node].Plugins {
			if r.Plugin == name {
				v.Executors = append(v.Executors, ExecutorView{Node: node, User: r.User, Current: r.Manifest == p.ManifestHash, Error: r.Error})
			}
		}
	}
	return v, true
}

// Brief returns v without definitions, for lists.
func (v View) Brief() View {
	out := v
	out.Tools = make([]ToolView, len(v.Tools))
	for i, t := range v.Tools {
		b := ToolView{Name: t.Name, Status: t.Status}
		if t.Pin != nil {
			b.Pin = &event.ToolPin{Hash: t.Pin.Hash, Definition: event.ToolDefinition{Name: t.Pin.Definition.Name}}
		}
		for _, r := range t.Reported {
			r.Definition = nil
			b.Reported = append(b.Reported, r)
		}
		out.Tools[i] = b
	}
	return out
}

// Approval builds the plugin.approved that pins what executors report for
// the plugin now, or says why it cannot: no executor reports its tools,
// executors disagree on a tool's definition, or a report lacks its
// definition. The approval names each hash, so it pins exactly what the
// operator was shown.
func (v View) Approval(reason string) (event.PluginApprovedData, error) {
	d := event.PluginApprovedData{Plugin: v.Name, Manifest: v.ManifestHash, Reason: reason}
	var problems []string
	reported := 0
	for _, t := range v.Tools {
		switch len(t.Reported) {
		case 0:
			continue // pinned, not reported now: its pin goes
		case 1:
		default:
			var hs []string
			for _, r := range t.Reported {
				hs = append(hs, fmt.Sprintf("%s on %s", r.Hash, strings.Join(r.Nodes, ",")))
			}
			problems = append(problems, fmt.Sprintf("tool %s: executors disagree on its definition (%s): make their servers the same, then approve",
				t.Name, strings.Join(hs, "; ")))
			continue
		}
		reported++
		r := t.Reported[0]
		if r.Definition == nil {
			problems = append(problems, fmt.Sprintf("tool %s: no executor reported its definition (too large for its event?)", t.Name))
			continue
		}
		d.Tools = append(d.Tools, event.ToolPin{Hash: r.Hash, Definition: *r.Definition})
	}
	if reported == 0 && len(problems) == 0 {
		cmd := ""
		if len(v.Manifest.Command) > 0 {
			cmd = v.Manifest.Command[0]
		}
		return event.PluginApprovedData{}, fmt.Errorf("plugin %s: no executor reports its tools yet: an executor that has %q starts its server when the plugin is added or when it starts (agentctl plugin show %s says where it runs and why not)",
			v.Name, cmd, v.Name)
	}
	if len(problems) > 0 {
		return event.PluginApprovedData{}, fmt.Errorf("plugin %s cannot be approved:\n  %s", v.Name, strings.Join(problems, "\n  "))
	}
	return d, nil
}
