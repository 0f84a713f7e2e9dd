package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

const toolsPolicy = `name: tools
scopes: {files: ["/srv/data/**"]}
tools:
  - tool: fs/read_*
    level: low
    action: allow
  - tool: fs/write_file
    level: medium
    action: confirm
  - tool: fs/delete_everything
    action: deny
    reason: never
  - tool: "fs/*"
    trusted: true
`

func toolStep(name string) event.Step {
	return event.Step{ID: "t", Kind: event.KindTool, Tool: name, Args: json.RawMessage(`{}`)}
}

func TestJudgeTool(t *testing.T) {
	p, err := Parse([]byte(toolsPolicy), "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ro := &ToolFacts{Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	destr := &ToolFacts{Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true}`)}
	plain := &ToolFacts{Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false}`)}
	for _, c := range []struct {
		name   string
		tool   string
		facts  *ToolFacts
		action Action
		level  Level
		why    string
	}{
		{"a rule allows", "fs/read_text_file", nil, Allow, Low, `rule "fs/read_*"`},
		{"a rule confirms", "fs/write_file", plain, Confirm, Medium, `rule "fs/write_file"`},
		{"destructiveHint raises a rule's level", "fs/write_file", destr, Confirm, High, "destructiveHint raises the level"},
		{"a rule denies", "fs/delete_everything", ro, Deny, High, "never"},
		{"trusted and read-only: allowed", "fs/list_directory", ro, Allow, Low, "declares readOnlyHint and a tools: rule trusts it"},
		{"trusted, not read-only: confirmed", "fs/move_file", plain, Confirm, Medium, "does not declare readOnlyHint"},
		{"trusted, destructive by default", "fs/move_file", &ToolFacts{Annotations: json.RawMessage(`{}`)}, Confirm, High, "may be destructive"},
		{"untrusted read-only hint is not believed", "git/log", ro, Confirm, Medium, "annotations are not trusted"},
		{"no facts (the orchestrator): confirmed", "fs/list_directory", nil, Confirm, High, "known only from its server's hints"},
	} {
		v := p.JudgeTool(toolStep(c.tool), c.facts)
		if v.Action != c.action || v.Level != c.level || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: %s %s %q; want %s %s and %q", c.name, v.Action, v.Level, v.Why, c.action, c.level, c.why)
		}
	}
	// Path arguments outside the file scope are denied, located.
	v := p.JudgeTool(toolStep("fs/read_text_file"), &ToolFacts{Annotations: ro.Annotations,
		Paths: []ToolPath{{"args.path", "/srv/data/a.md"}, {"args.paths[1]", "/etc/shadow"}}})
	if v.Action != Deny || v.Rule != RuleScope || !strings.Contains(v.Why, `args.paths[1] "/etc/shadow" lies outside the file scope`) {
		t.Errorf("path outside the scope: %+v", v)
	}
	if v := p.JudgeTool(toolStep("fs/read_text_file"), &ToolFacts{Paths: []ToolPath{{"args.path", "/srv/data/a.md"}}}); v.Action != Allow {
		t.Errorf("path inside the scope: %+v", v)
	}
	// JudgeStep judges a tool step without facts.
	if v := p.JudgeStep(toolStep("fs/read_text_file"), ""); v.Action != Allow {
		t.Errorf("JudgeStep: %+v", v)
	}
	// A default-deny policy denies a tool no rule names.
	d, err := Parse([]byte("name: strict\ndefault: deny\n"), "strict.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if v := d.JudgeTool(toolStep("fs/read_text_file"), ro); v.Action != Deny {
		t.Errorf("default deny: %+v", v)
	}
}

func TestToolRulesLoad(t *testing.T) {
	_, err := Parse([]byte("name: x\ntools:\n  - tool: nosplash\n  - tool: fs/x\n    colour: red\n  - level: low\n"), "bad.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`tools[0].tool: "nosplash": name a tool as plugin/tool`, "tools[1]", "colour", "tools[2]: a tool rule needs tool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	// tools: rules change the hash; a policy without them keeps its own.
	a, _ := Parse([]byte("name: x\n"), "a.yaml")
	b, _ := Parse([]byte("name: x\ntools:\n  - tool: fs/*\n    trusted: true\n"), "b.yaml")
	if a.Hash() == b.Hash() {
		t.Error("tools: rules do not change the hash")
	}
	if strings.Contains(string(a.Canonical()), "tools") {
		t.Errorf("a policy without tools: rules has them in its canonical form: %s", a.Canonical())
	}
}
