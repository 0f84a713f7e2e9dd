package core

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
)

// RuleGrants is the rule of a verdict that refuses a tool call whose path
// arguments lie outside its plugin's grants.filesystem.
const RuleGrants = "grants.filesystem"

// foldPlugin folds plugin.added, plugin.approved and plugin.removed into
// the plugins the leader judges tool steps with (State.Plugins: the
// manifests in force and their pinned definitions). A change of pins
// voids the open gates of tool steps judged with another definition: the
// step is judged again, with the definition in force.
func foldPlugin(s *State, ev event.Event) {
	if s.Plugins == nil {
		s.Plugins = &plugin.State{}
	}
	if err := s.Plugins.Apply(ev); err != nil {
		s.Ignored++
		return
	}
	for _, r := range s.activeRuns() {
		for i, st := range r.Steps {
			if st.Status != StepGated || st.Gate == nil || st.Gate.Kind != event.GatePolicy || st.Spec.Kind != event.KindTool {
				continue
			}
			if st.Gate.ToolHash != s.toolHash(st.Spec) && s.setStepStatus(r, i, StepPending) {
				st.Error, st.Code, st.Class = "", "", ""
				s.setWait(r, i)
			}
		}
	}
}

// toolPin is the manifest in force and the pinned definition of a tool
// step's tool, or false when its plugin is unknown or the tool unpinned.
func (s *State) toolPin(spec event.Step) (event.PluginManifest, event.ToolPin, bool) {
	if spec.Kind != event.KindTool || s.Plugins == nil {
		return event.PluginManifest{}, event.ToolPin{}, false
	}
	pl, tool, err := event.SplitToolName(spec.Tool)
	if err != nil {
		return event.PluginManifest{}, event.ToolPin{}, false
	}
	p := s.Plugins.Plugins[pl]
	if p == nil {
		return event.PluginManifest{}, event.ToolPin{}, false
	}
	pin, ok := p.Pins[tool]
	return p.Manifest, pin, ok
}

// toolHash is the hash of the pinned definition a tool step is judged
// with, or "" (another kind, or no pin).
func (s *State) toolHash(spec event.Step) string {
	_, pin, _ := s.toolPin(spec)
	return pin.Hash
}

// stepSubject is the gate subject of spec under ref, bound for a tool
// step to the hash of its pinned definition (event.ToolGateSubject).
func (s *State) stepSubject(spec event.Step, ref event.PolicyRef) string {
	return event.ToolGateSubject(spec, ref, s.toolHash(spec))
}

// judgeToolPinned is the policy's verdict on a tool step whose pinned
// definition and manifest are known: policy.JudgeTool with the facts the
// executor judges with again before the call — the annotations of the
// pin, the paths its arguments name (the manifest's path_args) — and a
// path outside the plugin's grants.filesystem denied, with where it is.
func judgeToolPinned(p *policy.Policy, spec event.Step, m event.PluginManifest, pin event.ToolPin) policy.Verdict {
	_, tool, _ := event.SplitToolName(spec.Tool)
	f := &policy.ToolFacts{Annotations: pin.Definition.Annotations}
	paths, err := plugin.Paths(m, tool, spec.Args)
	for _, pa := range paths {
		f.Paths = append(f.Paths, policy.ToolPath{Where: pa.Where, Path: pa.Path})
	}
	if err == nil {
		err = plugin.CheckGrants(m, tool, spec.Args)
	}
	v := p.JudgeTool(spec, f)
	if err != nil && v.Action != policy.Deny {
		v.Rule, v.Level, v.Action = RuleGrants, policy.High, policy.Deny
		v.Why = fmt.Sprintf("tool %s: %v", spec.Tool, err)
		v.Approvals, v.NotSubmitter = 0, false
	}
	return v
}
