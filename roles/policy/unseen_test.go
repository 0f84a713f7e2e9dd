package policy

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// unseenCases are the interpreter and wrapper spellings of the hostile
// test, verbatim where it gave them: inline code behind an option, and
// wrappers that run a command string.
var unseenCases = []bypass{
	{`perl -MFile::Path=rmtree -e 'rmtree("x")'`, "perl -e"},
	{`perl -Mstrict -e 'unlink "x"'`, "perl -e"},
	{`perl -I lib -Mstrict -we 'system("rm -rf ~")'`, "perl -we"},
	{`perl -ne 'print' x`, "perl -ne"},
	{`python3 -W ignore -c 'import os'`, "python3 -c"},
	{`python3 -X dev -c 'import os'`, "python3 -c"},
	{`python3 -I -c 'import os'`, "python3 -c"},
	{`python3 -Wignore -Xdev -Bc 'import os'`, "python3 -Bc"},
	{`python3 -m pip --version; python3 -E -s -c 'import os'`, "python3 -c"},
	{`node -r fs -e 'fs.rmSync("x")'`, "node -e"},
	{`node --require fs --eval 'fs.rmSync("x")'`, "node --eval"},
	{`node --input-type=module -p 'process.exit()'`, "node -p"},
	{`ruby -r fileutils -e 'FileUtils.rm_rf("x")'`, "ruby -e"},
	{`ruby -I lib -C /tmp -e 'exit'`, "ruby -e"},
	{`php -d x=1 -r 'unlink("x");'`, "php -r"},
	{`php -c php.ini -r 'unlink("x");'`, "php -r"},
	{`flock FILE -c 'rm -rf ~'`, "flock -c"},
	{`git -c core.pager='rm -rf ~' log`, "core.pager"},
	{`git -c core.editor='rm -rf ~' commit`, "core.editor"},
	{`gdb -ex shell`, "gdb -ex"},
	{`gdb --batch --eval-command='shell rm -rf ~'`, "gdb --eval-command"},
	{`gdb -x cmds.gdb ./prog`, "gdb -x"},
	{`sed '1e rm -rf ~' f`, "sed e"},
	{`sed -e p -e '$e rm -rf ~' f`, "sed e"},
	{`sed 's/x/y/e' f`, "sed"},
	{`sed -f script.sed f`, "sed -f"},
	{`pypy3 -c 'import os'`, "pypy3 -c"},
	{`pypy -c 'import os'`, "pypy -c"},
	{`deno eval 'Deno.removeSync("x", {recursive: true})'`, "deno eval"},
	{`deno run -A -`, "deno"},
	{`bun -e 'require("fs").rmSync("x", {recursive: true})'`, "bun -e"},
	{`Rscript --vanilla -e 'unlink("x", recursive=TRUE)'`, "Rscript -e"},
	{`osascript -l JavaScript -e 'x'`, "osascript -e"},
	{`julia --startup-file=no -e 'rm("x"; recursive=true)'`, "julia -e"},
	{`awk 'BEGIN { system("rm -rf ~") }'`, "awk"},
	{`python3 - <<'EOF'` + "\nimport shutil\nEOF", "python3"},
	{`echo 'import shutil' | python3 -u`, "python3"},
	{`zip -T -TT 'rm -rf ~' x.zip f`, "zip -TT"},
}

func loadCompact(t testing.TB) *Policy {
	t.Helper()
	data, err := os.ReadFile("testdata/compact.yaml")
	if err != nil {
		t.Fatalf("read the compact policy: %v", err)
	}
	return mustParse(t, string(data))
}

// TestCompactTestdataIsTheNotesPolicy: the testdata file is the policy of
// the notes, the same as the one the older corpus tests spell inline.
func TestCompactTestdataIsTheNotesPolicy(t *testing.T) {
	if got, want := loadCompact(t).Hash(), mustParse(t, compactPolicy).Hash(); got != want {
		t.Fatalf("testdata/compact.yaml hashes to %s, the notes' policy to %s", got, want)
	}
}

func TestUnseenCodeCompact(t *testing.T) {
	judgeCorpus(t, loadCompact(t), unseenCases)
}

func TestUnseenCodeDefault(t *testing.T) {
	judgeCorpus(t, Default(), unseenCases)
}

// TestUnseenCodeDeny: code the judge cannot read is what the policy's
// unresolved action says — deny when the policy says so — and the wrappers
// that run a command string are parsed, so the command inside is judged by
// the rules like any other.
func TestUnseenCodeDeny(t *testing.T) {
	p := mustParse(t, "unresolved: deny\nrules: [{pattern: \"rm -rf\", action: deny}]\n")
	for _, b := range unseenCases {
		if v := p.Judge(b.cmd); v.Action != Deny {
			t.Errorf("%q: %s (rule %s), want deny: %s", b.cmd, v.Action, v.Rule, v.Why)
		}
	}
	for _, c := range []string{"flock FILE -c 'rm -rf ~'", "git -c core.pager='rm -rf ~' log", "gdb -batch -ex 'shell rm -rf ~'",
		"sed '1e rm -rf ~' f", "zip -T -TT 'rm -rf ~' x.zip f", "vim -c '!rm -rf ~'"} {
		v := p.Judge(c)
		if v.Action != Deny || (v.Rule != "rm -rf" && !strings.HasPrefix(c, "vim")) {
			t.Errorf("%q: %s by rule %q, want deny by rule \"rm -rf\": %s", c, v.Action, v.Rule, v.Why)
		}
	}
}

// TestOrdinaryStaysAllowed: what plans run every day is not made stricter
// by the effect classes and the interpreter reading.
func TestOrdinaryStaysAllowed(t *testing.T) {
	ordinary := []string{
		"go build ./...", "make", "make -j4 all", "ls | grep x", "go test ./pkg/...",
		"python3 manage.py migrate --database db1", "python3 train.py -c config.yaml",
		"python3 -m pytest -x", "python3 -W ignore script.py", "python3 -u -X dev app.py --eval x",
		"node server.js -e prod", "node -r dotenv/config server.js", "perl -Mstrict script.pl -e x",
		"ruby -I lib test.rb -e x", "php -d memory_limit=1G artisan migrate", "deno run main.ts",
		"find . -name '*.tmp' -delete", "find ./build -name '*.o' -exec rm {} +",
		"sed -i 's/version = .*/version = 3/' ./pyproject.toml", "sed -n '1,5p' f", "sed 's/e/E/g' f",
		"sed -e '/^#/d' -e 's/a/b/' f", "sed '$!N;s/\\n/ /' f", "sed 'y/abc/xyz/' f",
		"git log --oneline", "git -c color.ui=never log", "gdb -batch -ex bt ./core",
		"rsync -a ./src/ ./dst/", "mv a b", "chmod -R 755 ./build", "chmod 000 ./secret",
		"truncate -s 10M ./disk.img", "echo hi > ./out.txt", "echo hi >> ./out.txt", "cp a ./b",
		"flock /tmp/l make", "awk '{print $1}' f", "echo -n x > ./f",
		"exec > ./build.log 2>&1; make",
	}
	p := Default()
	for _, c := range ordinary {
		if v := p.Judge(c); v.Action != Allow {
			t.Errorf("%q: %s (rule %s): %s", c, v.Action, v.Rule, v.Why)
		}
	}
	c := loadCompact(t)
	for _, cmd := range ordinary {
		if v := c.Judge(cmd); v.Action != Allow {
			t.Errorf("compact: %q: %s (rule %s): %s", cmd, v.Action, v.Rule, v.Why)
		}
	}
}

// TestEffectRules: match.effect names a class whatever the spelling; a
// rule for rm -r stands for its class with its args applied to what is
// destroyed; allow rules are never widened to a class.
func TestEffectRules(t *testing.T) {
	p := mustParse(t, `rules:
  - {name: no-wipes, match: {effect: [wipe]}, action: deny}
  - {name: root, pattern: "rm -rf /", action: deny}
  - {name: tmp, match: {command: [rm], flags: [-r], args: ["/tmp/*"]}, level: medium, action: confirm}
  - {name: build, pattern: "rm -rf ./build", action: allow}
`)
	cases := []struct {
		cmd    string
		action Action
		rule   string
	}{
		{": > ./log", Deny, "no-wipes"},
		{"dd if=/dev/zero of=./disk.img", Deny, "no-wipes"},
		{"mv ./db /dev/null", Deny, "no-wipes"},
		{"echo x > ./log", Allow, RuleDefault},
		{"find / -delete", Deny, "root"},
		{"rsync -a --delete ./empty/ /", Deny, "root"},
		{"find ./x -delete", Allow, RuleDefault},
		{"find /tmp/x -delete", Confirm, "tmp"},
		{"cd /tmp && find x -delete", Confirm, "tmp"},
		{"find $D -delete", Confirm, "root"}, // a deny that may match asks, as anything unresolved does
		{"rm -rf ./build", Allow, "build"},
		{"find ./build -delete", Allow, RuleDefault},
	}
	for _, c := range cases {
		v := p.Judge(c.cmd)
		if v.Action != c.action || v.Rule != c.rule {
			t.Errorf("%q: %s by %q, want %s by %q: %s", c.cmd, v.Action, v.Rule, c.action, c.rule, v.Why)
		}
	}
	v := p.Judge("find / -delete")
	if !strings.Contains(v.Why, "find -delete (a recursive delete of /)") || !slices.ContainsFunc(v.Highlights, func(h Highlight) bool { return h.Text == "-delete" && h.Rule == "root" }) {
		t.Errorf("find / -delete: the verdict does not name the effect: %s %+v", v.Why, v.Highlights)
	}
}

func TestEffectKeyIsChecked(t *testing.T) {
	_, err := Parse([]byte("rules:\n  - {match: {effect: [recursive-delete, shred-all]}, level: high}\n"), "bad.yaml")
	if err == nil || !strings.Contains(err.Error(), `bad.yaml:2:22: rules[0].match.effect[1]: unknown effect "shred-all" (want one of: recursive-delete, wipe)`) {
		t.Fatalf("want an error naming the unknown effect, got %v", err)
	}
	a := mustParse(t, "rules: [{match: {command: [rm]}, level: high}]")
	b := mustParse(t, "rules: [{match: {command: [rm], effect: [wipe]}, level: high}]")
	if a.Hash() == b.Hash() {
		t.Fatal("a rule's effect does not change the policy hash")
	}
}

// TestExactInlineCodeMayBeAllowed: inline code is unresolved unless an
// allow rule names the program and exactly that code; nothing less
// allows it (a rule for the program alone, other code, more arguments,
// code known only at run time, a glob that would match the code).
func TestExactInlineCodeMayBeAllowed(t *testing.T) {
	p := mustParse(t, `rules:
  - {name: version, pattern: "python3 -c 'import sys; print(sys.version)'", action: allow}
  - {name: python, match: {command: [python3]}, action: allow}
  - {name: perl-glob, match: {command: [perl], flags: [-e], args: ["*"]}, action: allow}
`)
	cases := []struct {
		cmd    string
		action Action
		rule   string
	}{
		{"python3 -c 'import sys; print(sys.version)'", Allow, "version"},
		{`python3 -c "import sys; print(sys.version)"`, Allow, "version"},
		{"python3 -c 'import sys; print(sys.path)'", Confirm, RuleUnresolved},
		{"python3 -c 'import sys; print(sys.version)' extra", Confirm, RuleUnresolved},
		{"python3 -I -c 'import sys; print(sys.version)'", Confirm, RuleUnresolved},
		{"python3 -c \"$CODE\"", Confirm, RuleUnresolved},
		{"LD_PRELOAD=x.so python3 -c 'import sys; print(sys.version)'", Confirm, RuleUnresolved},
		{"python3 script.py", Allow, "python"},
		{"perl -e 'unlink q(x)'", Confirm, RuleUnresolved},
	}
	for _, c := range cases {
		v := p.Judge(c.cmd)
		if v.Action != c.action || v.Rule != c.rule {
			t.Errorf("%q: %s by %q, want %s by %q: %s", c.cmd, v.Action, v.Rule, c.action, c.rule, v.Why)
		}
	}
}
