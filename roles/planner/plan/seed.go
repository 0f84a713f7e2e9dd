package plan

import (
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// decodeSeed decodes the seed format that LLM prompts produce:
//
//	{"mode": "plan", "goal": "…", "steps": [{"goal": "…", "commands": ["…", "…"]}, …]}
//
// Entry N (1-based) becomes subgoal "sN" titled with its goal; its commands
// become shell steps "sN.1", "sN.2", … that run in order (each depends on
// the one before). Entries run in order too: the first step of an entry
// depends on the last step of the nearest earlier entry that has steps.
// "goal" at the top is optional; without it the plan's goal is the entries'
// goals joined with "; ".
func (w *walker) decodeSeed(root *yaml.Node, d *draft) {
	entries, ok := w.mapping(root, d.root, seedFields)
	if !ok {
		d.stepsBad = true
		return
	}
	for _, e := range entries {
		p := at(e.val, e.name)
		switch e.name {
		case "mode":
			if mode, ok := w.str(e.val, p); ok && mode != "plan" {
				w.ps.add(p, "mode must be %q, got %q", "plan", mode)
			}
		case "goal":
			d.goal, _ = w.str(e.val, p)
			d.goalAt = &p
		case "steps":
			w.decodeSeedEntries(d, e.val, p)
		}
	}
	if d.goal == "" {
		titles := make([]string, 0, len(d.subgoals))
		for _, sg := range d.subgoals {
			if sg.title != "" {
				titles = append(titles, sg.title)
			}
		}
		d.goal = strings.Join(titles, "; ")
	}
}

// decodeSeedEntries decodes the seed "steps" list into subgoals and steps.
func (w *walker) decodeSeedEntries(d *draft, n *yaml.Node, p pos) {
	items, ok := w.list(n, p, `e.g. [{"goal": "…", "commands": ["…"]}]`)
	if !ok {
		d.stepsBad = true
		return
	}
	last := "" // the last step of the previous entry with steps
	for k, item := range items {
		if w.exhausted {
			return
		}
		ip := at(item, p.index(k).path)
		fields, ok := w.mapping(item, ip, seedStepFields)
		if !ok {
			d.stepsBad = true
			continue
		}
		sg := &draftSubgoal{id: fmt.Sprintf("s%d", k+1), at: ip, idAt: ip}
		d.subgoals = append(d.subgoals, sg)
		for _, f := range fields {
			fp := at(f.val, ip.child(f.name).path)
			switch f.name {
			case "goal":
				sg.title, _ = w.str(f.val, fp)
			case "commands":
				last = w.decodeCommands(d, sg, f.val, fp, last)
			}
		}
	}
}

// decodeCommands adds one shell step per command to subgoal sg, chained in
// order after the step named prev; it returns the new last step.
func (w *walker) decodeCommands(d *draft, sg *draftSubgoal, n *yaml.Node, p pos, prev string) string {
	if r := w.resolve(n); r != nil && r.Kind == yaml.ScalarNode && r.Tag != "!!null" {
		n = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{r}, Line: r.Line, Column: r.Column}
	}
	cmds, ok := w.list(n, p, `e.g. ["make", "make test"]`)
	if !ok {
		d.stepsBad = true
		return prev
	}
	for j, c := range cmds {
		if w.exhausted || !w.room(d) {
			break
		}
		cp := at(c, p.index(j).path)
		run, ok := w.str(c, cp)
		s := &draftStep{
			step:  event.Step{ID: fmt.Sprintf("%s.%d", sg.id, j+1), Subgoal: sg.id, Kind: event.KindShell, Run: run},
			at:    cp,
			field: map[string]pos{"run": cp, "id": cp},
			bad:   map[string]bool{"run": !ok},
		}
		if prev != "" {
			s.deps = []ref{{id: prev, at: cp}}
		}
		d.steps = append(d.steps, s)
		prev = s.step.ID
	}
	return prev
}
