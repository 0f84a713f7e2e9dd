package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestCompactPatternMatchesAnySpelling(t *testing.T) {
	p := mustParse(t, compactPolicy)
	for _, cmd := range []string{"rm -rf x", "rm -fr x", "rm -r -f x", "rm -f -r x", "rm --recursive --force x",
		"rm -R --force x", "rm --force -R x", "rm x -rf", "rm -rfv x",
		// A recursive delete without -f is the same effect when no
		// terminal asks (docs/policy.md, "Same effect, same rule").
		"rm -r x", "rm -R x"} {
		v := p.Judge(cmd)
		if v.Action != Confirm || v.Rule != "rm -rf" || v.Level != High {
			t.Errorf("%q: got %s %s rule %q, want confirm high rule \"rm -rf\": %s", cmd, v.Action, v.Level, v.Rule, v.Why)
		}
	}
	for _, cmd := range []string{"rm x", "rm -f x", "rm -d x", "rmdir x", "echo rm -rf", "ls -rf"} {
		if v := p.Judge(cmd); v.Action != Allow {
			t.Errorf("%q: got %s (%s), want allow: no rule names it", cmd, v.Action, v.Why)
		}
	}
}

func TestAllowedFlagsRaiseTheLevel(t *testing.T) {
	p := mustParse(t, compactPolicy)
	cases := []struct {
		cmd    string
		action Action
		level  Level
	}{
		{"apt-get -y install nginx", Allow, Medium},
		{"apt-get install --yes nginx", Allow, Medium},
		{"apt-get update", Allow, Medium},
		{"apt-get install --purge nginx", Confirm, High},
		{"apt-get -y -f install", Confirm, High},
		{"apt-get install $PKG", Confirm, High},
	}
	for _, c := range cases {
		v := p.Judge(c.cmd)
		if v.Action != c.action || v.Level != c.level || v.Rule != "apt-get" {
			t.Errorf("%q: got %s %s rule %q, want %s %s rule apt-get: %s", c.cmd, v.Action, v.Level, v.Rule, c.action, c.level, v.Why)
		}
	}
	v := p.Judge("apt-get install --purge nginx")
	if !strings.Contains(v.Why, "--purge not in allowed_flags") {
		t.Errorf("explanation does not name the flag outside allowed_flags: %s", v.Why)
	}
	if !hasHighlight(v, "--purge", "apt-get") {
		t.Errorf("--purge not highlighted with rule apt-get: %+v", v.Highlights)
	}
}

func TestAllowedFlagsWithSubcommands(t *testing.T) {
	p := mustParse(t, `rules:
  - match: {command: apt-get}
    level: medium
    allowed_flags: ["-y", "install", "update"]
`)
	if v := p.Judge("apt-get -y install nginx"); v.Action != Allow {
		t.Errorf("install: %s %s", v.Action, v.Why)
	}
	if v := p.Judge("apt-get -y remove nginx"); v.Action != Confirm || !strings.Contains(v.Why, "subcommand remove") {
		t.Errorf("remove: %s %s", v.Action, v.Why)
	}
}

func TestMostSpecificRuleDecidesAndDenyWins(t *testing.T) {
	p := mustParse(t, `default: allow
rules:
  - {name: rf, pattern: "rm -rf", level: high, action: confirm}
  - {name: build, pattern: "rm -rf ./build", level: low, action: allow}
  - {name: broad-allow, pattern: "rm", level: low, action: allow}
  - {name: no-root, match: {command: rm, any_args: ["/"]}, level: critical, action: deny}
`)
	cases := []struct {
		cmd    string
		action Action
		rule   string
	}{
		{"rm -rf ./build", Allow, "build"},
		{"rm -fr build/", Confirm, "rf"}, // not exactly ./build
		{"rm -rf ./src", Confirm, "rf"},
		{"rm x", Allow, "broad-allow"},
		{"rm /", Deny, "no-root"},
		{"rm -rf //", Deny, "no-root"},
		{"rm -rf ./build $X", Confirm, "no-root"}, // $X may be /: not allowed, not denied on a guess
		{"rm -rf ./build /", Deny, "no-root"},
		{"rm -rf ./build ./src", Confirm, "rf"}, // more than the allow rule names
		{"rm -rfv ./build", Confirm, "rf"},
	}
	for _, c := range cases {
		v := p.Judge(c.cmd)
		if v.Action != c.action || v.Rule != c.rule {
			t.Errorf("%q: got %s rule %q, want %s rule %q: %s", c.cmd, v.Action, v.Rule, c.action, c.rule, v.Why)
		}
	}
}

func TestUnresolvedIsNeverAllowed(t *testing.T) {
	p := mustParse(t, `default: allow
rules:
  - {pattern: "ls", action: allow}
`)
	for _, cmd := range []string{"$X", "$X ls", "${IFS}ls", "l$(echo s)", "ls; $(printf rm) -rf /", "l? -la", "echo x | sh", "eval $X"} {
		v := p.Judge(cmd)
		if v.Action == Allow || !v.Unresolved || v.Level < High {
			t.Errorf("%q: got %s %s unresolved=%v, want not allow, high, unresolved: %s", cmd, v.Action, v.Level, v.Unresolved, v.Why)
		}
	}
	if _, err := Parse([]byte("unresolved: allow\n"), "p.yaml"); err == nil || !strings.Contains(err.Error(), "p.yaml:1:13: unresolved") {
		t.Errorf("unresolved: allow: got %v, want an error at p.yaml:1:13", err)
	}
	d := mustParse(t, "unresolved: deny\nrules: []\n")
	if v := d.Judge("$X"); v.Action != Deny {
		t.Errorf("unresolved: deny: got %s", v.Action)
	}
}

func TestStrictLoadingNamesTheLine(t *testing.T) {
	cases := []struct {
		yml  string
		want []string
	}{
		{"rules:\n  - pattern: rm -rf\n    levle: high\n", []string{"bad.yaml:3:5: rules[0].levle: unknown key", "a rule needs a level"}},
		{"rules:\n  - {pattern: rm, level: severe}\n", []string{"bad.yaml:2:26: rules[0].level: \"severe\" is not a level"}},
		{"rules:\n  - {pattern: rm, level: high, action: maybe}\n", []string{"bad.yaml:2:40: rules[0].action: \"maybe\" is not an action"}},
		{"rules:\n  - match: {command: rm, any_args: [\"[\"]}\n    level: high\n", []string{"bad.yaml:2:36: rules[0].match.any_args[0]: \"[\": bad glob"}},
		{"scopes: {files: [\"/srv/[\"]}\n", []string{"bad.yaml:1:17: scopes.files[0]"}},
		{"rules:\n  - {pattern: \"rm -rf $X\", level: high}\n", []string{"bad.yaml:2:15: rules[0].pattern"}},
		{"rules:\n  - {pattern: \"ls | sh\", level: high}\n", []string{"not one plain command"}},
		{"rules:\n  - {pattern: rm, match: {command: rm}, level: high}\n", []string{"give pattern or match, not both"}},
		{"rules:\n  - {level: high}\n", []string{"needs a pattern or a match"}},
		{"rules:\n  - {pattern: rm, level: high, action: allow, require_confirmation: true}\n", []string{"allow contradicts require_confirmation"}},
		{"rules:\n  - {match: {flags: [-r]}, level: high}\n", []string{"name a command, writes or an effect"}},
		{"rules:\n  - {match: {command: rm, flags: [r]}, level: high}\n", []string{"\"r\" is not a flag"}},
		{"rules:\n  - {name: a, pattern: rm, level: high}\n  - {name: a, pattern: ls, level: low}\n", []string{"rules[1].name: \"a\" is also the name of the rule on line 2"}},
		{"budgets: {run_time: soon, steps: -1}\n", []string{"budgets.run_time: \"soon\" is not a duration", "budgets.steps: -1 is out of range"}},
		{"approvals: {critical: {approvers: 0}}\n", []string{"approvals.critical.approvers: 0 is out of range"}},
		{"levels: {urgent: deny}\n", []string{"levels.urgent: unknown key"}},
		{"rules: {pattern: rm}\n", []string{"want a list of rules"}},
		{"rules:\n  - {pattern: rm, level: high}\nrules: []\n", []string{"rules: given twice"}},
		{"default: [allow]\n", []string{"default: want a string"}},
		{"- a\n- b\n", []string{"want a mapping"}},
		{"rules: [\n", []string{"not YAML"}},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.yml), "bad.yaml")
		if err == nil {
			t.Errorf("%q: loaded, want an error", c.yml)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: error %v is not ErrInvalid", c.yml, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", c.yml, err, w)
			}
		}
	}
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	_, err := Parse([]byte("default: maybe\nrules:\n  - {pattern: rm, level: severe}\n  - {pattern: ls, levle: low}\n"), "p.yaml")
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) < 3 {
		t.Fatalf("got %v, want at least 3 problems", err)
	}
}

func TestFullSchema(t *testing.T) {
	p := mustParse(t, `name: strict
version: 7
default: confirm
unresolved: deny
levels: {low: allow, medium: confirm, high: confirm, critical: deny}
approvals:
  high: {approvers: 1}
  critical: {approvers: 2, not_submitter: true}
  irreversible_extra: 1
scopes:
  files: ["/srv/app/**", "./**"]
  network: ["registry.internal:443"]
  outside: critical
budgets: {run_time: 30m, steps: 200, replans: 3, llm_tokens: 200000}
rules:
  - name: ls
    match: {command: [ls, cat]}
    level: low
  - name: deploy
    match: {command: rsync, flags: ["-a"], args: ["/srv/app/*"]}
    level: medium
  - name: drop
    match: {command: psql, any_flags: ["-c"]}
    level: high
    reversible: false
    reason: may drop tables
`)
	if p.Name != "strict" || p.Version != 7 || p.Default != Confirm || p.Unresolved != Deny {
		t.Errorf("top-level fields: %+v", p)
	}
	if p.Budgets != (Budgets{RunTime: 30 * time.Minute, Steps: 200, Replans: 3, LLMTokens: 200000}) {
		t.Errorf("budgets: %+v", p.Budgets)
	}
	if p.Approvals[Critical] != (Approval{Approvers: 2, NotSubmitter: true}) || p.Approvals[Low].Approvers != 1 {
		t.Errorf("approvals: %+v", p.Approvals)
	}
	if !slices.Equal(p.Scopes.Network, []string{"registry.internal:443"}) || p.Scopes.Outside != Critical {
		t.Errorf("scopes: %+v", p.Scopes)
	}
	if v := p.Judge("ls -la"); v.Action != Allow || v.Rule != "ls" {
		t.Errorf("ls: %s %s", v.Action, v.Why)
	}
	if v := p.Judge("whoami"); v.Action != Confirm || v.Rule != RuleDefault {
		t.Errorf("default confirm: %s %s", v.Action, v.Rule)
	}
	if v := p.Judge("ls; whoami"); v.Action != Confirm || v.Rule != RuleDefault || !strings.Contains(v.Why, "no rule names whoami") {
		t.Errorf("a part no rule names under default confirm: %s %s %s", v.Action, v.Rule, v.Why)
	}
	if v := p.Judge("rsync -a build/ /srv/app/current"); v.Action != Confirm || v.Level != Medium || v.Rule != "deploy" {
		t.Errorf("levels medium→confirm: %s %s %s", v.Action, v.Level, v.Rule)
	}
	v := p.Judge("psql -c 'drop table x'")
	if v.Action != Confirm || v.Approvals != 2 || v.Reversible || !strings.Contains(v.Why, "may drop tables") {
		t.Errorf("irreversible: approvals %d reversible %v why %s", v.Approvals, v.Reversible, v.Why)
	}
	if v := p.Judge("cat x > /etc/motd"); v.Action != Deny || v.Level != Critical || v.Rule != RuleScope {
		t.Errorf("outside the scope: %s %s %s", v.Action, v.Level, v.Rule)
	}
	if v := p.JudgeIn("cat x > ../y", "/srv/app/current"); v.Action != Allow {
		t.Errorf("relative write inside the scope through dir: %s %s", v.Action, v.Why)
	}
	if v := p.Judge("cat x > ../y"); v.Action == Allow {
		t.Errorf("relative write leaving an unknown dir: allowed")
	}
	if v := p.Judge("$X"); v.Action != Deny {
		t.Errorf("unresolved deny: %s", v.Action)
	}
	if v := p.Judge("rm -rf / ; echo $(cat /etc/hostname)"); v.Approvals != 0 && v.Action != Confirm {
		t.Errorf("approvals on a non-confirm: %d", v.Approvals)
	}
}

func TestCriticalApprovalsAndDefaultOneOperator(t *testing.T) {
	v := Default().Judge("rm -rf /")
	if v.Action != Confirm || v.Level != Critical || v.Approvals != 1 || v.NotSubmitter {
		t.Errorf("default policy: %s %s approvals %d not_submitter %v: a one-operator cluster must approve it alone", v.Action, v.Level, v.Approvals, v.NotSubmitter)
	}
	if v.Reversible {
		t.Errorf("rm -rf / labelled reversible")
	}
}

func TestHashIsCanonical(t *testing.T) {
	a := mustParse(t, compactPolicy)
	b := mustParse(t, `# the same policy, written differently
rules:
  - level: high
    pattern: "rm -fr"           # flags in another order
    require_confirmation: true
    name: "rm -rf"
  - allowed_flags: ["--yes"]    # -y's long spelling
    pattern: apt-get
    level: medium
`)
	if a.Hash() != b.Hash() {
		t.Errorf("same policy, different hashes:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	if !strings.HasPrefix(a.Hash(), "sha256:") || len(a.Hash()) != 71 {
		t.Errorf("hash %q: want sha256:<64 hex>", a.Hash())
	}
	c := mustParse(t, strings.Replace(compactPolicy, "medium", "high", 1))
	if c.Hash() == a.Hash() {
		t.Errorf("a changed level kept the hash")
	}
	if a.WithVersion(3).Hash() != a.Hash() || a.WithVersion(3).Judge("ls").Policy.Version != 3 {
		t.Errorf("the version changes the hash or is not recorded in verdicts")
	}
	again := mustParse(t, compactPolicy)
	if string(again.Canonical()) != string(a.Canonical()) {
		t.Errorf("canonical form is not deterministic")
	}
}

func TestVerdictJSONFieldNames(t *testing.T) {
	v := Default().Judge("sudo rm -rf /var/www")
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"command", "action", "level", "rule", "why", "policy", "approvals", "reversible", "unresolved", "findings", "highlights"} {
		if _, ok := m[k]; !ok {
			t.Errorf("verdict JSON lacks %q: %s", k, b)
		}
	}
	if m["action"] != "confirm" || m["level"] != "high" {
		t.Errorf("action/level not written as names: %s", b)
	}
	var back Verdict
	if err := json.Unmarshal(b, &back); err != nil || back.Action != v.Action || back.Level != v.Level || len(back.Highlights) != len(v.Highlights) {
		t.Errorf("verdict does not round-trip: %v", err)
	}
	if !hasHighlight(v, "-rf", "recursive-force-delete") || !hasHighlight(v, "sudo", "privilege") {
		t.Errorf("highlights: %+v", v.Highlights)
	}
	for _, h := range v.Highlights {
		if h.Span.Start >= 0 && v.Command[h.Span.Start:h.Span.End] != h.Text {
			t.Errorf("highlight %q does not match its span %v", h.Text, h.Span)
		}
	}
}

func TestHighlightsInsideNestedStrings(t *testing.T) {
	cmd := `bash -c 'git push --force origin main'`
	v := Default().Judge(cmd)
	if !hasHighlight(v, "--force", "force-push") {
		t.Fatalf("highlights: %+v", v.Highlights)
	}
	for _, h := range v.Highlights {
		if h.Text == "--force" && cmd[h.Span.Start:h.Span.End] != "--force" {
			t.Errorf("--force span %v points at %q", h.Span, cmd[h.Span.Start:h.Span.End])
		}
	}
	v = Default().Judge("git reset --hard && apt-get purge -y x && rm --no-preserve-root -rf /")
	for _, want := range []string{"--hard", "--no-preserve-root", "-rf"} {
		found := false
		for _, h := range v.Highlights {
			found = found || h.Text == want && h.Rule != ""
		}
		if !found {
			t.Errorf("%s not highlighted with a rule: %+v", want, v.Highlights)
		}
	}
}

func hasHighlight(v Verdict, text, rule string) bool {
	for _, h := range v.Highlights {
		if h.Text == text && h.Rule == rule {
			return true
		}
	}
	return false
}

// TestExamplesStayAllowed: every command of the shipped example plans runs
// under the default policy without a gate.
func TestExamplesStayAllowed(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example plans found: %v", err)
	}
	n := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, cmd := range commandsOf(&doc) {
			n++
			if v := Default().Judge(cmd); v.Action != Allow {
				t.Errorf("%s: %q: %s (%s)", file, cmd, v.Action, v.Why)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d example commands, want the examples' run and check commands", n)
	}
}

func commandsOf(n *yaml.Node) []string {
	var out []string
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if (k.Value == "run" || k.Value == "check") && v.Kind == yaml.ScalarNode {
				out = append(out, v.Value)
			}
		}
	}
	for _, c := range n.Content {
		out = append(out, commandsOf(c)...)
	}
	return out
}

func TestOrdinaryCommandsAllowed(t *testing.T) {
	for _, cmd := range []string{
		"go test ./...", "make build", "ls -la", "cat README.md | grep -i foo", "mkdir -p build && cd build && cmake ..",
		"git status", "git push origin main", "git commit -m 'fix: x'", "npm ci", "apt-get install -y nginx",
		"python3 script.py --flag", "echo $HOME", "tar -xzf a.tar.gz -C ./out", "rm -f ./build/x.o", "rm /tmp/x",
		"find . -name '*.o' -delete", "curl -fsSL https://example.com -o ./x", "sed -i s/a/b/ ./config.ini",
		"for f in *.txt; do wc -l \"$f\"; done", "docker build -t app .", "command -v nginx >/dev/null 2>&1",
		"cp a.txt b.txt", "echo hi > out.log 2>&1", "printf '%s\\n' a b | sort -u", "true", "", "# only a comment",
	} {
		if v := Default().Judge(cmd); v.Action != Allow {
			t.Errorf("%q: %s (%s)", cmd, v.Action, v.Why)
		}
	}
}

func TestRuleMatchingWritesAndArgs(t *testing.T) {
	p := mustParse(t, `rules:
  - {name: etc, match: {writes: ["/etc/**"]}, level: high}
  - {name: prod, match: {command: kubectl, subcommand: delete, args: ["-n", "prod"]}, level: critical}
`)
	for cmd, rule := range map[string]string{
		"echo x >> /etc/hosts":               "etc",
		"cp a /etc/":                         "etc",
		"sudo -- tee /etc/x < y":             "etc",
		"echo x > $F":                        "etc", // may write /etc
		"kubectl delete pod x -n prod":       "",    // -n is a flag here, args never see it
		"kubectl delete pod prod --force -n": "",
	} {
		v := p.Judge(cmd)
		if rule == "" {
			continue
		}
		if v.Rule != rule || v.Action != Confirm {
			t.Errorf("%q: got %s rule %q, want confirm rule %q: %s", cmd, v.Action, v.Rule, rule, v.Why)
		}
	}
}

// TestOriginsPolicyAsWritten: the policy of the original design notes,
// byte for byte, loads and means the compact policy.
func TestOriginsPolicyAsWritten(t *testing.T) {
	p := mustParse(t, `rules:
  - pattern: "rm -rf"
    level: "high"
    require_confirmation: true
  - pattern: "apt-get"
    level: "medium"
    allowed_flags: ["-y"]
`)
	if p.Hash() != mustParse(t, compactPolicy).Hash() {
		t.Errorf("the notes' policy and the flow-style compact policy differ")
	}
	if len(p.Rules) != 2 || p.Rules[0].Action != Confirm || p.Rules[1].Action != 0 || p.Rules[1].Level != Medium {
		t.Errorf("rules: %+v", p.Rules)
	}
}

// TestGatesTimeout: gates.timeout and on_timeout load, default to deny,
// change the hash, and bad values are errors naming the key.
func TestGatesTimeout(t *testing.T) {
	base := mustParse(t, "rules: []\n")
	p := mustParse(t, "gates: {timeout: 24h, on_timeout: skip}\n")
	if p.Gates.Timeout != 24*time.Hour || p.Gates.OnTimeout != "skip" {
		t.Errorf("gates = %+v, want 24h skip", p.Gates)
	}
	if p.Hash() == base.Hash() {
		t.Error("a gate timeout does not change the hash")
	}
	if d := mustParse(t, "gates: {timeout: 1h}\n"); d.Gates.OnTimeout != "deny" {
		t.Errorf("on_timeout defaults to %q, want deny", d.Gates.OnTimeout)
	}
	for _, bad := range []string{"gates: {timeout: soon}\n", "gates: {on_timeout: run}\n", "gates: {timout: 1h}\n"} {
		if _, err := Parse([]byte(bad), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "gates.") {
			t.Errorf("%q: err %v, want one naming gates.", bad, err)
		}
	}
}

// TestApprovePlans: approve_plans reads true, false and by-level, changes
// the hash, and refuses anything else.
func TestApprovePlans(t *testing.T) {
	base := mustParse(t, "rules: []\n")
	for in, want := range map[string]string{"true": PlansAll, "false": PlansNone, "by-level": PlansByLevel} {
		p := mustParse(t, "approve_plans: "+in+"\n")
		if p.ApprovePlans != want {
			t.Errorf("approve_plans: %s = %q, want %q", in, p.ApprovePlans, want)
		}
		if (p.Hash() == base.Hash()) != (want == PlansNone) {
			t.Errorf("approve_plans: %s: hash changed %v", in, p.Hash() != base.Hash())
		}
	}
	if _, err := Parse([]byte("approve_plans: sometimes\n"), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "approve_plans") {
		t.Errorf("approve_plans: sometimes: %v", err)
	}
}
