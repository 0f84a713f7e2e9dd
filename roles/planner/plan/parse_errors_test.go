package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// want describes one problem an invalid plan must produce. Zero fields are
// not checked.
type want struct {
	line int
	col  int
	path string
	msg  string // substring of Problem.Msg
}

// requireProblems checks that err is an invalid-plan error holding every
// wanted problem.
func requireProblems(t *testing.T, err error, wants ...want) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("errors.As(err, *Error) = false for %T", err)
	}
	for _, w := range wants {
		found := false
		for _, p := range perr.Problems {
			if (w.line == 0 || p.Line == w.line) && (w.col == 0 || p.Col == w.col) &&
				(w.path == "" || p.Path == w.path) && strings.Contains(p.Msg, w.msg) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no problem matches %+v in:\n%v", w, err)
		}
	}
	return perr
}

func TestParseErrors(t *testing.T) {
	steps := func(n int, f func(i int) string) string {
		var b strings.Builder
		b.WriteString("steps:\n")
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	tests := []struct {
		name  string
		file  string
		input string
		wants []want
	}{
		{"yaml syntax", "p.yaml", "goal: x\n  bad: y\n", []want{{line: 2, msg: "invalid YAML: mapping values are not allowed"}}},
		{"yaml unquoted colon", "p.yaml", "steps:\n  - id: a\n    run: echo a: b\n", []want{{line: 3, msg: `a value that contains ": " must be quoted`}}},
		{"json syntax", "p.json", `{"steps": [1,]}`, []want{{line: 1, col: 14, msg: "invalid JSON: invalid character ']'"}}},
		{"json syntax multiline", "p.json", "{\n  \"steps\": [\n    {\"id\": \"a\" \"run\": \"x\"}\n  ]\n}", []want{{line: 3, col: 16, msg: "invalid JSON"}}},
		{"json sniffed", "plan", `{"steps": [`, []want{{msg: "invalid JSON"}}},
		{"json truncated", "p.json", `{"steps": [`, []want{{msg: "invalid JSON: unexpected end"}}},
		{"empty file", "p.yaml", "", []want{{line: 1, msg: "plan file is empty"}}},
		{"blank json", "p.json", "  \n", []want{{msg: "plan file is empty"}}},
		{"only comments", "p.yaml", "# nothing\n", []want{{msg: "plan file is empty"}}},
		{"null document", "p.yaml", "~\n", []want{{msg: "plan file is empty"}}},
		{"two documents", "p.yaml", "steps: [{id: a, run: x}]\n---\nsteps: []\n", []want{{line: 2, msg: "more than one YAML document"}}},
		{"not a mapping", "p.yaml", "- a\n- b\n", []want{{line: 1, msg: "must be a mapping, got a list"}}},
		{"unknown top field", "p.yaml", "goal: x\nstep:\n  - id: a\n", []want{{line: 2, col: 1, path: "step", msg: `unknown field "step" (did you mean "steps"?); allowed: goal, steps, subgoals`}, {msg: "plan has no steps"}}},
		{"unknown step field", "p.yaml", "steps:\n  - id: a\n    rnu: make\n", []want{{line: 3, col: 5, path: "steps[0].rnu", msg: `unknown field "rnu" (did you mean "run"?)`}}},
		{"field hint command", "p.yaml", "steps:\n  - id: a\n    command: make\n", []want{{path: "steps[0].command", msg: `(the command goes in "run")`}}},
		{"field hint needs", "p.yaml", "steps:\n  - id: a\n    run: x\n    needs: [b]\n", []want{{path: "steps[0].needs", msg: `(dependencies go in "depends_on")`}}},
		{"field hint commands", "p.yaml", "steps:\n  - id: a\n    commands: [x]\n", []want{{path: "steps[0].commands", msg: `seed format`}}},
		{"unknown subgoal field", "p.yaml", "subgoals:\n  - id: s\n    stesp: []\n", []want{{path: "subgoals[0].stesp", msg: `did you mean "steps"?`}}},
		{"duplicate key", "p.yaml", "steps:\n  - id: a\n    run: x\n    run: y\n", []want{{line: 4, path: "steps[0].run", msg: `duplicate key "run" (first at line 3:5)`}}},
		{"non-string key", "p.yaml", "steps:\n  - id: a\n    run: x\n    [k]: y\n", []want{{line: 4, msg: "keys must be strings, got a list"}}},
		{"run not a string", "p.yaml", "steps:\n  - id: a\n    run: [make]\n", []want{{line: 3, col: 10, path: "steps[0].run", msg: "must be a string, got a list"}}},
		{"retries not an int", "p.yaml", "steps:\n  - id: a\n    run: x\n    retries: three\n", []want{{path: "steps[0].retries", msg: `must be an integer, got a string ("three")`}}},
		{"retries float", "p.json", `{"steps": [{"id": "a", "run": "x", "retries": 1.5}]}`, []want{{path: "steps[0].retries", msg: "must be an integer, got a number (1.5)"}}},
		{"idempotent not a bool", "p.yaml", "steps:\n  - id: a\n    run: x\n    idempotent: yes\n", []want{{path: "steps[0].idempotent", msg: "must be true or false"}}},
		{"env not a mapping", "p.yaml", "steps:\n  - id: a\n    run: x\n    env: [A=1]\n", []want{{path: "steps[0].env", msg: "must be a mapping, got a list"}}},
		{"env value not a string", "p.yaml", "steps:\n  - id: a\n    run: x\n    env: {A: [1]}\n", []want{{path: "steps[0].env.A", msg: "must be a string"}}},
		{"env bad name", "p.yaml", "steps:\n  - id: a\n    run: x\n    env: {1A: x}\n", []want{{line: 4, path: "steps[0].env.1A", msg: `env name "1A" is not a valid variable name`}}},
		{"capabilities not a list", "p.yaml", "steps:\n  - id: a\n    run: x\n    capabilities: {docker: true}\n", []want{{path: "steps[0].capabilities", msg: "must be a list of ids, got a mapping"}}},
		{"capability bad name", "p.yaml", "steps:\n  - id: a\n    run: x\n    capabilities: [docker, \"gpu 2\", \"\"]\n", []want{
			{line: 4, col: 28, path: "steps[0].capabilities[1]", msg: `capability "gpu 2": only letters, digits, '-' and '_' are allowed`},
			{path: "steps[0].capabilities[2]", msg: "capability is empty"}}},
		{"capability too long", "p.yaml", "steps:\n  - id: a\n    run: x\n    capabilities: " + strings.Repeat("c", MaxCapabilityLen+1) + "\n", []want{{line: 4, col: 19, path: "steps[0].capabilities", msg: "capability is 65 bytes; the limit is 64"}}},
		{"depends_on not a list", "p.yaml", "steps:\n  - id: a\n    run: x\n    depends_on: {b: c}\n", []want{{path: "steps[0].depends_on", msg: "must be a list of ids, got a mapping"}}},
		{"steps not a list", "p.yaml", "steps: 5\n", []want{{path: "steps", msg: "must be a list"}}},
		{"step not a mapping", "p.yaml", "steps:\n  - make\n", []want{{path: "steps[0]", msg: "must be a mapping, got a string"}}},
		{"subgoals not a list", "p.yaml", "subgoals: {a: b}\n", []want{{path: "subgoals", msg: "must be a list"}}},
		{"no steps", "p.yaml", "goal: nothing\n", []want{{msg: "plan has no steps"}}},
		{"empty steps", "p.json", `{"goal": "x", "steps": []}`, []want{{line: 1, col: 1, msg: "plan has no steps"}}},
		{"missing id", "p.yaml", "steps:\n  - run: x\n", []want{{path: "steps[0].id", msg: "step has no id"}}},
		{"bad id charset", "p.yaml", "steps:\n  - id: a b\n    run: x\n", []want{{line: 2, path: "steps[0].id", msg: `step id "a b" has a space: use letters, digits`}}},
		{"id too long", "p.yaml", "steps:\n  - id: " + strings.Repeat("a", MaxIDLen+1) + "\n    run: x\n", []want{{path: "steps[0].id", msg: "is 65 bytes; the limit is 64"}}},
		{"id dot", "p.yaml", "steps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: c, run: x}\n  - {id: '.', run: x}\n",
			[]want{{line: 5, col: 10, path: "steps[3].id", msg: `step id ".": a '.' may only separate two parts`}}},
		{"id dot dot", "p.yaml", "steps:\n  - {id: '..', run: x}\n", []want{{path: "steps[0].id", msg: `step id ".."`}}},
		{"id empty part", "p.yaml", "steps:\n  - {id: a..b, run: x}\n  - {id: .a, run: x}\n  - {id: a., run: x}\n",
			[]want{{path: "steps[0].id", msg: "may only separate"}, {path: "steps[1].id", msg: "may only separate"}, {path: "steps[2].id", msg: "may only separate"}}},
		{"id wildcards", "p.yaml", "steps:\n  - {id: 'a*', run: x}\n  - {id: '>', run: x}\n  - {id: a/b, run: x}\n",
			[]want{{path: "steps[0].id", msg: `'*'`}, {path: "steps[1].id", msg: `'>'`}, {path: "steps[2].id", msg: `'/'`}}},
		{"id unicode", "p.yaml", "steps:\n  - {id: café, run: x}\n", []want{{path: "steps[0].id", msg: "non-ASCII"}}},
		{"subgoal id dots", "p.yaml", "subgoals:\n  - id: '..'\n    steps: [{id: a, run: x}]\n", []want{{path: "subgoals[0].id", msg: `subgoal id ".."`}}},
		{"id at limit", "p.yaml", "steps:\n  - id: " + strings.Repeat("a", MaxIDLen) + "\n    run: x\n  - id: b\n    kind: bash\n", []want{{path: "steps[1].kind"}}},
		{"duplicate step id", "p.yaml", "steps:\n  - id: a\n    run: x\n  - id: a\n    run: y\n", []want{{line: 4, path: "steps[1].id", msg: `duplicate step id "a" (first declared at line 2:9)`}}},
		{"duplicate across subgoals", "p.yaml", "subgoals:\n  - id: s\n    steps: [{id: a, run: x}]\n  - id: t\n    steps: [{id: a, run: y}]\n", []want{{path: "subgoals[1].steps[0].id", msg: `duplicate step id "a"`}}},
		{"duplicate subgoal id", "p.yaml", "subgoals:\n  - id: s\n    steps: [{id: a, run: x}]\n  - id: s\n    steps: [{id: b, run: y}]\n", []want{{path: "subgoals[1].id", msg: `duplicate subgoal id "s"`}}},
		{"step id is a subgoal id", "p.yaml", "subgoals:\n  - id: s\n    steps: [{id: s, run: x}]\n", []want{{path: "subgoals[0].steps[0].id", msg: "also the id of a subgoal"}}},
		{"subgoal without id", "p.yaml", "subgoals:\n  - steps: [{id: a, run: x}]\n", []want{{msg: "subgoal has no id"}}},
		{"empty subgoal", "p.yaml", "subgoals:\n  - id: s\n    steps: []\n  - id: t\n    steps: [{id: a, run: x}]\n", []want{{line: 2, path: "subgoals[0]", msg: `subgoal "s" has no steps`}}},
		{"unknown dependency", "p.yaml", "steps:\n  - id: build\n    run: make\n  - id: test\n    run: make test\n    depends_on: [bulid]\n", []want{{line: 6, col: 18, path: "steps[1].depends_on[0]", msg: `unknown step "bulid" (did you mean "build"?)`}}},
		{"unknown dependency no suggestion", "p.yaml", "steps:\n  - id: build\n    run: make\n    depends_on: [zzzzzz]\n", []want{{path: "steps[0].depends_on[0]", msg: `unknown step "zzzzzz"`}}},
		{"unknown dependency with subgoals", "p.yaml", "subgoals:\n  - id: setup\n    steps: [{id: a, run: x, depends_on: [stup]}]\n", []want{{msg: `unknown step or subgoal "stup" (did you mean "setup"?)`}}},
		{"empty dependency", "p.yaml", "steps:\n  - id: a\n    run: x\n    depends_on: ['']\n", []want{{path: "steps[0].depends_on[0]", msg: "empty dependency"}}},
		{"self dependency", "p.yaml", "steps:\n  - id: a\n    run: x\n    depends_on: [a]\n", []want{{path: "steps[0].depends_on[0]", msg: `step "a" depends on itself`}}},
		{"cycle", "p.yaml", "steps:\n  - id: a\n    run: x\n    depends_on: [b]\n  - id: b\n    run: x\n    depends_on: [c]\n  - id: c\n    run: x\n    depends_on: [a]\n", []want{{line: 4, path: "steps[0].depends_on[0]", msg: "cycle: a -> b -> c -> a"}}},
		{"two cycles", "p.yaml", "steps:\n  - {id: a, run: x, depends_on: [b]}\n  - {id: b, run: x, depends_on: [a]}\n  - {id: c, run: x, depends_on: [d]}\n  - {id: d, run: x, depends_on: [c]}\n", []want{{msg: "cycle: a -> b -> a"}, {msg: "cycle: c -> d -> c"}}},
		{"cycle through subgoal reference", "p.yaml", "subgoals:\n  - id: s\n    steps: [{id: a, run: x, depends_on: [b]}]\n  - id: t\n    steps: [{id: b, run: x, depends_on: [s]}]\n", []want{{msg: "cycle: a -> b -> a"}}},
		{"subgoal cycle", "p.yaml", "subgoals:\n  - id: a\n    depends_on: b\n    steps: [{id: a1, run: x}]\n  - id: b\n    depends_on: [a]\n    steps: [{id: b1, run: x}]\n", []want{{line: 3, path: "subgoals[0].depends_on", msg: "cycle: subgoal a -> b -> a"}}},
		{"subgoal depends on itself", "p.yaml", "subgoals:\n  - id: a\n    depends_on: [a]\n    steps: [{id: a1, run: x}]\n", []want{{msg: `subgoal "a" depends on itself`}}},
		{"subgoal depends on own step", "p.yaml", "subgoals:\n  - id: a\n    depends_on: [a1]\n    steps: [{id: a1, run: x}]\n", []want{{msg: `subgoal "a" depends on its own step "a1"`}}},
		{"subgoal unknown dependency", "p.yaml", "subgoals:\n  - id: build\n    steps: [{id: a1, run: x}]\n  - id: test\n    depends_on: [biuld]\n    steps: [{id: b1, run: x}]\n", []want{{path: "subgoals[1].depends_on[0]", msg: `unknown subgoal or step "biuld" (did you mean "build"?)`}}},
		{"step depends on own subgoal", "p.yaml", "subgoals:\n  - id: s\n    steps: [{id: a, run: x, depends_on: [s]}]\n", []want{{msg: `step "a" depends on its own subgoal "s"`}}},
		{"shell without run", "p.yaml", "steps:\n  - id: a\n    kind: shell\n", []want{{path: "steps[0].run", msg: "shell step needs run"}}},
		{"blank run", "p.yaml", "steps:\n  - id: a\n    run: '  '\n", []want{{line: 3, col: 10, path: "steps[0].run", msg: "run is empty"}}},
		{"empty run", "p.yaml", "steps:\n  - id: a\n    run: ''\n", []want{{line: 3, col: 10, path: "steps[0].run", msg: "run is empty"}}},
		{"null run", "p.yaml", "steps:\n  - id: a\n    run:\n", []want{{path: "steps[0].run", msg: "run is empty"}}},
		{"empty run json", "p.json", `{"steps": [{"id": "a", "run": ""}]}`, []want{{path: "steps[0].run", msg: "run is empty"}}},
		{"noop with empty run", "p.yaml", "steps:\n  - id: a\n    kind: noop\n    run: ''\n", []want{{path: "steps[0].run", msg: "run is empty"}}},
		{"shell with empty run", "p.yaml", "steps:\n  - id: a\n    kind: shell\n    run: ''\n", []want{{path: "steps[0].run", msg: "run is empty"}}},
		{"empty check", "p.yaml", "steps:\n  - id: a\n    run: x\n    check: ' '\n", []want{{path: "steps[0].check", msg: "check is empty"}}},
		{"empty creates", "p.yaml", "steps:\n  - id: a\n    run: x\n    creates: ''\n", []want{{path: "steps[0].creates", msg: "creates is empty"}}},
		{"empty cwd", "p.yaml", "steps:\n  - id: a\n    run: x\n    cwd: '\t'\n", []want{{path: "steps[0].cwd", msg: "cwd is empty"}}},
		{"timeout over limit", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: 2562047h\n", []want{{line: 4, col: 14, path: "steps[0].timeout", msg: "timeout is 2562047h0m0s; the limit is 24h0m0s"}}},
		{"timeout seconds over limit", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: 86401\n", []want{{path: "steps[0].timeout", msg: "timeout is 24h0m1s; the limit is 24h0m0s"}}},
		{"backoff over limit", "p.yaml", "steps:\n  - id: a\n    run: x\n    retries: 1\n    backoff: 2562047h\n", []want{{path: "steps[0].backoff", msg: "backoff is 2562047h0m0s; the limit is 5m0s"}}},
		{"secret in env", "p.yaml", "steps:\n  - id: a\n    run: x\n    env:\n      DB_PASSWORD: hunter2\n", []want{{line: 5, col: 7, path: "steps[0].env.DB_PASSWORD", msg: "env DB_PASSWORD holds what looks like a secret (key=value secret)"}}},
		{"token in env", "p.yaml", "steps:\n  - id: a\n    run: x\n    env: {KEY: sk-abcdefghijklmnopqrstuvwxyz}\n", []want{{path: "steps[0].env.KEY", msg: "OpenAI-style key"}}},
		{"NUL in env", "p.json", `{"steps": [{"id": "a", "run": "x", "env": {"A": "x\u0000y"}}]}`, []want{{path: "steps[0].env.A", msg: "env A contains a NUL byte"}}},
		{"secret in run", "p.yaml", "steps:\n  - id: a\n    run: curl -u me:pw https://user:hunter2@example.com/\n", []want{{path: "steps[0].run", msg: "run holds what looks like a secret (URL credentials)"}}},
		{"secret in goal", "p.yaml", "goal: 'password=hunter2'\nsteps:\n  - {id: a, run: x}\n", []want{{line: 1, col: 7, path: "goal", msg: "goal holds what looks like a secret"}}},
		{"secret in subgoal title", "p.yaml", "subgoals:\n  - id: s\n    title: 'token: abcdefghijkl'\n    steps: [{id: a, run: x}]\n", []want{{path: "subgoals[0].title", msg: "title holds what looks like a secret"}}},
		{"UTF-16LE", "p.yaml", "\xff\xfes\x00t\x00", []want{{line: 1, col: 1, msg: "plan file is UTF-16 (little-endian); save it as UTF-8"}}},
		{"UTF-16BE", "p.yaml", "\xfe\xff\x00s\x00t", []want{{msg: "plan file is UTF-16 (big-endian); save it as UTF-8"}}},
		{"UTF-32LE", "p.json", "\xff\xfe\x00\x00{\x00\x00\x00", []want{{msg: "plan file is UTF-32 (little-endian); save it as UTF-8"}}},
		{"UTF-32BE", "p", "\x00\x00\xfe\xff\x00\x00\x00{", []want{{msg: "plan file is UTF-32 (big-endian); save it as UTF-8"}}},
		{"UTF-16 without BOM", "p.yaml", "s\x00t\x00e\x00p\x00s\x00:\x00", []want{{line: 1, col: 2, msg: "NUL bytes: it is not UTF-8 text (UTF-16 or UTF-32 without a byte-order mark?)"}}},
		{"NUL in text", "p.yaml", "steps:\n  - id: a\n    run: x\x00y\n", []want{{line: 3, col: 11, msg: "NUL bytes: it is not UTF-8 text (a binary file?)"}}},
		{"Latin-1", "p.yaml", "goal: caf\xe9\nsteps:\n  - {id: a, run: x}\n", []want{{line: 1, col: 10, msg: "plan file is not valid UTF-8 (byte 0xe9 at offset 9); save it as UTF-8"}}},
		{"noop with run", "p.yaml", "steps:\n  - id: a\n    kind: noop\n    run: x\n", []want{{path: "steps[0].run", msg: "noop step has run"}}},
		{"bad kind", "p.yaml", "steps:\n  - id: a\n    kind: bash\n    run: x\n", []want{{line: 3, col: 11, path: "steps[0].kind", msg: `unknown kind "bash"; allowed: shell, noop`}}},
		{"bad on_failure", "p.yaml", "steps:\n  - id: a\n    run: x\n    on_failure: rebuild\n", []want{{path: "steps[0].on_failure", msg: `unknown on_failure "rebuild"; allowed: abort, retry, continue, replan`}}},
		{"retry without retries", "p.yaml", "steps:\n  - id: a\n    run: x\n    on_failure: retry\n", []want{{path: "steps[0].on_failure", msg: "on_failure: retry needs retries > 0"}}},
		{"negative retries", "p.yaml", "steps:\n  - id: a\n    run: x\n    retries: -1\n", []want{{path: "steps[0].retries", msg: "retries must not be negative, got -1"}}},
		{"too many retries", "p.yaml", "steps:\n  - id: a\n    run: x\n    retries: 1000\n", []want{{path: "steps[0].retries", msg: "the limit is 100"}}},
		{"negative timeout", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: -5s\n", []want{{path: "steps[0].timeout", msg: "timeout must not be negative, got -5s"}}},
		{"negative timeout seconds", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: -5\n", []want{{path: "steps[0].timeout", msg: "timeout must not be negative"}}},
		{"negative backoff", "p.yaml", "steps:\n  - id: a\n    run: x\n    retries: 1\n    backoff: -1s\n", []want{{path: "steps[0].backoff", msg: "backoff must not be negative"}}},
		{"bad duration", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: 5 minutes\n", []want{{line: 4, col: 14, path: "steps[0].timeout", msg: `bad duration "5 minutes": use a duration like "30s"`}}},
		{"bad duration type", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: [1]\n", []want{{path: "steps[0].timeout", msg: "bad duration: got a list"}}},
		{"duration overflow", "p.yaml", "steps:\n  - id: a\n    run: x\n    timeout: 99999999999999\n", []want{{path: "steps[0].timeout", msg: "out of range"}}},
		{"command too long", "p.yaml", "steps:\n  - id: a\n    run: " + strings.Repeat("x", MaxCommandBytes+1) + "\n", []want{{path: "steps[0].run", msg: "run is 65537 bytes; the limit is 65536"}}},
		{"check too long", "p.yaml", "steps:\n  - id: a\n    run: x\n    check: " + strings.Repeat("x", MaxCommandBytes+1) + "\n", []want{{path: "steps[0].check", msg: "check is 65537 bytes"}}},
		{"NUL in run", "p.json", `{"steps": [{"id": "a", "run": "x\u0000y"}]}`, []want{{path: "steps[0].run", msg: "NUL byte"}}},
		{"file too large", "p.yaml", "goal: " + strings.Repeat("x", MaxFileBytes), []want{{msg: "file is 1048582 bytes; the limit is 1048576"}}},
		{"too many steps", "p.yaml", steps(MaxSteps+1, func(i int) string { return fmt.Sprintf("- {id: s%d}\n", i) }), []want{{msg: "plan has more than 10000 steps"}}},
		{"too many dependencies", "p.yaml", wide(100, 100), []want{{msg: "plan has more than 200000 dependencies once subgoal dependencies are expanded"}}},
		{"merge of a scalar", "p.yaml", "steps:\n  - <<: x\n    id: a\n", []want{{path: "steps[0]", msg: "merge key (<<) needs a mapping"}}},
		{"unknown field in merged mapping", "p.yaml", "steps:\n  - <<: {rnu: x}\n    id: a\n    run: y\n", []want{{line: 2, path: "steps[0].rnu", msg: `unknown field "rnu" (did you mean "run"?)`}}},
		{"unknown anchor", "p.yaml", "steps: *nope\n", []want{{msg: "invalid YAML: unknown anchor"}}},
		{"seed wrong mode", "p.json", `{"mode": "run", "steps": [{"goal": "g", "commands": ["x"]}]}`, []want{{path: "mode", msg: `mode must be "plan", got "run"`}}},
		{"seed unknown field", "p.json", `{"mode": "plan", "steps": [{"goal": "g", "cmds": ["x"]}]}`, []want{{path: "steps[0].cmds", msg: `unknown field "cmds"; allowed: goal, commands`}, {path: "steps[0]", msg: `subgoal "s1" has no steps`}}},
		{"seed commands wrong type", "p.json", `{"mode": "plan", "steps": [{"goal": "g", "commands": {"a": 1}}]}`, []want{{path: "steps[0].commands", msg: "must be a list"}}},
		{"seed empty command", "p.json", `{"mode": "plan", "steps": [{"goal": "g", "commands": ["x", ""]}]}`, []want{{line: 1, path: "steps[0].commands[1]", msg: "run is empty"}}},
		{"seed command not a string", "p.json", `{"mode": "plan", "steps": [{"goal": "g", "commands": [["x"]]}]}`, []want{{path: "steps[0].commands[0]", msg: "must be a string, got a list"}}},
		{"seed no entries", "p.json", `{"mode": "plan", "steps": []}`, []want{{msg: "plan has no steps"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.file, []byte(tt.input))
			if p != nil {
				t.Errorf("Parse returned a plan with an error: %+v", p)
			}
			requireProblems(t, err, tt.wants...)
		})
	}
}

// wide is a plan of n subgoals of m parallel steps, each subgoal depending
// on the one before: (n-1)·m·m dependencies once expanded.
func wide(n, m int) string {
	var b strings.Builder
	b.WriteString("subgoals:\n")
	for g := range n {
		fmt.Fprintf(&b, "  - id: g%d\n", g)
		if g > 0 {
			fmt.Fprintf(&b, "    depends_on: [g%d]\n", g-1)
		}
		b.WriteString("    steps:\n")
		for s := range m {
			fmt.Fprintf(&b, "      - {id: g%d.s%d, run: x}\n", g, s)
		}
	}
	return b.String()
}

// TestErrorFormat pins the one-problem-per-line output.
func TestErrorFormat(t *testing.T) {
	input := "steps:\n  - id: build\n    run: make\n  - id: test\n    run: make test\n    depends_on: [bulid]\n    kind: bash\n"
	_, err := Parse("plan.yaml", []byte(input))
	want := "plan.yaml:6:18: steps[1].depends_on[0]: unknown step \"bulid\" (did you mean \"build\"?)\n" +
		"plan.yaml:7:11: steps[1].kind: unknown kind \"bash\"; allowed: shell, noop, file.write, file.patch, critique, tool, research, synthesise"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	p := Problem{Path: "steps[0]", Msg: "m"}
	if got := p.String(); got != "steps[0]: m" {
		t.Errorf("Problem without file: %q", got)
	}
	p = Problem{File: "f", Line: 3, Msg: "m"}
	if got := p.String(); got != "f:3: m" {
		t.Errorf("Problem without column: %q", got)
	}
}

// TestAllProblemsReported: problems in different places are all reported,
// in file order, not just the first.
func TestAllProblemsReported(t *testing.T) {
	input := "steps:\n" +
		"  - id: a\n    kind: bash\n    run: x\n" + // line 3
		"  - id: b\n    run: x\n    retries: -2\n" + // line 7
		"  - id: c\n    run: x\n    depends_on: [zz]\n" // line 10
	_, err := Parse("p.yaml", []byte(input))
	perr := requireProblems(t, err, want{line: 3, msg: "unknown kind"}, want{line: 7, msg: "negative"}, want{line: 10, msg: "unknown step"})
	if len(perr.Problems) != 3 {
		t.Errorf("got %d problems, want 3:\n%v", len(perr.Problems), err)
	}
	for i := 1; i < len(perr.Problems); i++ {
		if perr.Problems[i].Line < perr.Problems[i-1].Line {
			t.Errorf("problems not in file order:\n%v", err)
		}
	}
}

// TestProblemCap: past MaxProblems, problems are counted, not listed.
func TestProblemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("steps:\n")
	for i := range MaxProblems + 50 {
		fmt.Fprintf(&b, "  - {id: s%d, kind: bad}\n", i)
	}
	_, err := Parse("p.yaml", []byte(b.String()))
	perr := requireProblems(t, err)
	if len(perr.Problems) != MaxProblems || perr.Omitted != 50 {
		t.Fatalf("got %d problems listed, %d omitted; want %d and 50", len(perr.Problems), perr.Omitted, MaxProblems)
	}
	if !strings.HasSuffix(err.Error(), "\n... and 50 more problems") {
		t.Errorf("error does not end with the omitted count: ...%s", err.Error()[len(err.Error())-60:])
	}
}

// TestAliasBomb: a document whose merge keys expand exponentially is
// refused once the visit budget is spent, instead of being walked.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-a0: &a0 {X: '1'}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "x-a%d: &a%d {<<: [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("steps:\n  - id: a\n    run: x\n    env: *a8\n")
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()))
	requireProblems(t, err, want{msg: "document too complex"})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Parse took %v", d)
	}
}
