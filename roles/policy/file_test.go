package policy

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

const editPolicy = `
default: allow
scopes:
  files: ["./**", "/srv/app/**"]
rules:
  - name: no-shadow
    match: {writes: ["/etc/shadow"]}
    level: critical
    action: deny
  - name: config
    match: {command: file.write, writes: ["/srv/app/conf/**"]}
    level: medium
    action: confirm
  - name: patches
    match: {command: file.patch}
    level: low
`

func TestJudgeEdit(t *testing.T) {
	p := mustParse(t, editPolicy)
	patch := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("--- a/" + n + "\n+++ b/" + n + "\n@@ -1 +1 @@\n-a\n+b\n")
		}
		return b.String()
	}
	cases := []struct {
		name   string
		step   event.Step
		dir    string
		action Action
		level  Level
		rule   string
		why    string // substring
	}{
		{"inside the working directory", event.Step{Kind: event.KindFileWrite, Path: "notes.txt"}, "/home/u/w", Allow, Low, RuleDefault, "no rule names file.write"},
		{"outside the scope", event.Step{Kind: event.KindFileWrite, Path: "/opt/x.conf"}, "/home/u/w", Confirm, High, RuleScope, "writes /opt/x.conf, outside the file scope"},
		{"escaping with ..", event.Step{Kind: event.KindFileWrite, Path: "../../etc/hosts"}, "/home/u/w", Confirm, High, RuleScope, "outside the file scope"},
		{"a rule on the path", event.Step{Kind: event.KindFileWrite, Path: "conf/app.yaml"}, "/srv/app", Confirm, Medium, "config", `rule "config"`},
		{"deny rule on a path", event.Step{Kind: event.KindFileWrite, Path: "/etc/shadow"}, "/", Deny, Critical, "no-shadow", "/etc/shadow"},
		{"patch rule", event.Step{Kind: event.KindFilePatch, Patch: patch("a.txt")}, "/srv/app", Allow, Low, "patches", ""},
		{"patch: every file judged", event.Step{Kind: event.KindFilePatch, Patch: patch("a.txt", "../../etc/shadow")}, "/srv/app", Deny, Critical, "no-shadow", ""},
		{"patch that does not parse", event.Step{Kind: event.KindFilePatch, Patch: "rm -rf /"}, "/srv/app", Confirm, High, RuleUnresolved, "names no file"},
		{"write without path", event.Step{Kind: event.KindFileWrite}, "/srv/app", Confirm, High, RuleUnresolved, "not given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := p.JudgeEdit(c.step, c.dir)
			if v.Action != c.action || v.Level != c.level || v.Rule != c.rule || !strings.Contains(v.Why, c.why) {
				t.Fatalf("got %s %s rule %q: %s\nwant %s %s rule %q, why containing %q", v.Action, v.Level, v.Rule, v.Why, c.action, c.level, c.rule, c.why)
			}
			if v.Policy != p.Ref() || !strings.HasPrefix(v.Command, string(c.step.Kind)) {
				t.Fatalf("verdict %+v", v)
			}
			if v.Action == Confirm && v.Approvals < 1 {
				t.Fatalf("confirm needs an approver: %+v", v)
			}
		})
	}
	// The highlight points at the path in the verdict's command.
	v := p.JudgeEdit(event.Step{Kind: event.KindFileWrite, Path: "/opt/x.conf"}, "/w")
	if len(v.Highlights) == 0 || v.Command[v.Highlights[0].Span.Start:v.Highlights[0].Span.End] != "/opt/x.conf" {
		t.Fatalf("highlights %+v of %q", v.Highlights, v.Command)
	}
	// Shell steps are judged as their command.
	if v := p.JudgeEdit(event.Step{Kind: event.KindShell, Run: "echo hi > /opt/x"}, "/w"); v.Rule != RuleScope {
		t.Fatalf("shell step: %+v", v)
	}
}

// The shipped default policy gates edits of system files and allows those
// in the working directory.
func TestJudgeEditDefaultPolicy(t *testing.T) {
	p := Default()
	if v := p.JudgeEdit(event.Step{Kind: event.KindFileWrite, Path: "out/report.txt"}, "/home/u/w"); v.Action != Allow {
		t.Errorf("write in the working directory: %s %s", v.Action, v.Why)
	}
	if v := p.JudgeEdit(event.Step{Kind: event.KindFileWrite, Path: "/etc/sudoers"}, "/home/u/w"); v.Action == Allow {
		t.Errorf("write to /etc/sudoers allowed: %s", v.Why)
	}
}

// The example of docs/policy.md: any file edit under /etc.
func TestJudgeEditGlobCommand(t *testing.T) {
	p := mustParse(t, `rules: [{match: {command: file.*, writes: ["/etc/**"]}, level: critical, action: confirm}]`)
	for _, s := range []event.Step{
		{Kind: event.KindFileWrite, Path: "/etc/app.conf"},
		{Kind: event.KindFilePatch, Patch: "--- a/app.conf\n+++ b/app.conf\n@@ -1 +1 @@\n-a\n+b\n"},
	} {
		if v := p.JudgeEdit(s, "/etc"); v.Action != Confirm || v.Level != Critical {
			t.Errorf("%s: %s %s %s", s.Kind, v.Action, v.Level, v.Why)
		}
	}
	if v := p.JudgeEdit(event.Step{Kind: event.KindFileWrite, Path: "x"}, "/home/u"); v.Action != Allow {
		t.Errorf("write outside /etc: %s %s", v.Action, v.Why)
	}
}

func TestAllowsWrite(t *testing.T) {
	p := mustParse(t, editPolicy)
	for target, want := range map[string]bool{"/srv/app/x": true, "/srv/other": false, "/w/in.txt": true, "/etc/hosts": false} {
		if got := p.AllowsWrite(target, "/w"); got != want {
			t.Errorf("AllowsWrite(%s) = %v, want %v", target, got, want)
		}
	}
	if mustParse(t, "default: allow\n").AllowsWrite("/tmp/x", "/w") {
		t.Error("a policy without a file scope allows an absolute path")
	}
}
