package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// ToolRule is one rule of the policy's tools: section: what it says of
// the plugin tools whose name ("plugin/tool") matches Tool, a name or a
// glob (fs/*, fs/read_*).
//
//	tools:
//	  - tool: fs/read_*
//	    level: low
//	    action: allow
//	  - tool: fs/write_file
//	    level: high
//	    action: confirm
//	  - tool: "fs/*"
//	    trusted: true   # believe the annotations these tools declare
type ToolRule struct {
	Tool string `json:"tool"`
	// Level is the risk of a call; without one, a rule with an Action
	// is low (allow) or high (confirm, deny), as a command rule.
	Level Level `json:"level,omitempty"`
	// Action, when set, decides; otherwise the policy's Levels do, when
	// Level is set; a rule with neither only marks trust.
	Action Action `json:"action,omitempty"`
	// Trusted believes the tools' annotations: a readOnlyHint of a
	// trusted tool makes a call allowed where no rule decides.
	Trusted bool   `json:"trusted,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// ToolFacts are what the executor knows of a tool call that the step
// alone does not say: the annotations of the tool's pinned definition,
// and the paths its arguments name (by the manifest's path_args).
type ToolFacts struct {
	Annotations json.RawMessage
	Paths       []ToolPath
}

// ToolPath is a path a tool call's arguments name, and where ("args.path").
type ToolPath struct{ Where, Path string }

// annotations are the hints a verdict reads.
type annotations struct {
	ReadOnly    bool  `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
}

var toolRuleKeys = []string{"tool", "level", "action", "trusted", "reason"}

func (l *loader) toolRules(n *yaml.Node, p *Policy) {
	if n.Kind != yaml.SequenceNode {
		l.bad(n, "tools", "want a list of tool rules, got %s", kindName(n))
		return
	}
	for i, rn := range n.Content {
		at := fmt.Sprintf("tools[%d]", i)
		var r ToolRule
		l.fields(rn, at, toolRuleKeys, func(key string, _, v *yaml.Node) {
			k := at + "." + key
			switch key {
			case "tool":
				r.Tool, _ = l.str(v, k)
				if _, err := path.Match(r.Tool, ""); err != nil || r.Tool == "" || !strings.Contains(r.Tool, "/") {
					l.bad(v, k, "%q: name a tool as plugin/tool, or a glob (fs/*, fs/read_*)", r.Tool)
				}
			case "level":
				r.Level = l.level(v, k)
			case "action":
				r.Action = l.action(v, k)
			case "trusted":
				r.Trusted, _ = l.boolean(v, k)
			case "reason":
				r.Reason, _ = l.str(v, k)
			}
		})
		if r.Tool == "" {
			l.bad(rn, at, "a tool rule needs tool: a name or a glob")
			continue
		}
		if r.Action != 0 && r.Level == 0 {
			// As a command rule: allow is low, confirm and deny high.
			r.Level = High
			if r.Action == Allow {
				r.Level = Low
			}
		}
		p.Tools = append(p.Tools, r)
	}
}

// matches reports whether the rule names tool.
func (r ToolRule) matches(tool string) bool {
	ok, err := path.Match(r.Tool, tool)
	return err == nil && ok || r.Tool == tool
}

// JudgeTool is the policy's verdict on a tool step: the first tools:
// rule that names its tool with a level or an action decides; without
// one, a call is allowed only when the tool declares readOnlyHint and a
// rule trusts it, and needs confirmation otherwise — at level high when
// the tool may be destructive (destructiveHint, true by MCP's default),
// medium else. Annotations are hints a server gives about itself: they
// never relax a rule, and a tool that is not trusted gets none of their
// benefit, only their warnings (destructiveHint raises a rule's level to
// high). With facts, a path argument outside the file scope
// (scopes.files) is denied, naming the argument. Without facts (the
// orchestrator's judgement, before assignment) annotations and paths are
// unknown: a tool no rule allows is confirmed.
func (p *Policy) JudgeTool(s event.Step, f *ToolFacts) Verdict {
	name := s.Tool
	v := Verdict{Command: "tool " + name, Policy: p.Ref(), Findings: []Finding{}, Highlights: []Highlight{}}
	trusted := false
	var rule *ToolRule
	for i := range p.Tools {
		r := &p.Tools[i]
		if !r.matches(name) {
			continue
		}
		trusted = trusted || r.Trusted
		if rule == nil && (r.Action != 0 || r.Level != 0) {
			rule = r
		}
	}
	var ann annotations
	known := f != nil && len(f.Annotations) > 0 && json.Unmarshal(f.Annotations, &ann) == nil
	destructive := !known || !ann.ReadOnly && (ann.Destructive == nil || *ann.Destructive)
	switch {
	case rule != nil:
		v.Rule, v.Level, v.Action = "tools: "+rule.Tool, rule.Level, rule.Action
		v.Why = fmt.Sprintf("tool %s: rule %q (%s)", name, rule.Tool, rule.Level)
		if rule.Reason != "" {
			v.Why += ": " + rule.Reason
		}
		if known && destructive && !ann.ReadOnly && ann.Destructive != nil && *ann.Destructive && v.Level < High {
			v.Level = High
			v.Why += "; its destructiveHint raises the level to high"
		}
		if v.Action == 0 {
			v.Action = p.Levels[v.Level]
		}
	case known && trusted && ann.ReadOnly:
		v.Rule, v.Level, v.Action = RuleDefault, Low, Allow
		v.Why = fmt.Sprintf("tool %s declares readOnlyHint and a tools: rule trusts it", name)
	default:
		v.Rule, v.Level, v.Action = RuleDefault, Medium, Confirm
		switch {
		case !known:
			v.Why = fmt.Sprintf("tool %s: no tools: rule allows it, and what it does is known only from its server's hints", name)
		case !trusted:
			v.Why = fmt.Sprintf("tool %s: no tools: rule names it, and its plugin's annotations are not trusted (trusted: true)", name)
		default:
			v.Why = fmt.Sprintf("tool %s does not declare readOnlyHint", name)
		}
		if destructive {
			v.Level = High
			v.Why += "; it may be destructive"
		}
	}
	if rule == nil && p.Default > v.Action {
		v.Action = p.Default // a default-deny policy denies what no rule names
	}
	if f != nil && len(p.Scopes.Files) > 0 && v.Action != Deny {
		for _, tp := range f.Paths {
			if !path.IsAbs(tp.Path) || !p.AllowsWrite(path.Clean(tp.Path), "") {
				v.Rule, v.Level, v.Action = RuleScope, High, Deny
				v.Why = fmt.Sprintf("tool %s: %s %q lies outside the file scope %v", name, tp.Where, tp.Path, p.Scopes.Files)
				break
			}
		}
	}
	if v.Action == Confirm {
		a := p.Approvals[v.Level]
		v.Approvals, v.NotSubmitter = a.Approvers, a.NotSubmitter
	}
	return v
}
