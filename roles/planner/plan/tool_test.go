package plan

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestToolSteps(t *testing.T) {
	p, err := Parse("tools.yaml", []byte(`goal: read notes
steps:
  - id: read
    tool: fs/read_text_file
    args: {path: /srv/data/notes.md, head: 10, opts: {deep: [1, "two"]}}
  - id: list
    kind: tool
    tool: fs/list_allowed_directories
    depends_on: [read]
`))
	if err != nil {
		t.Fatal(err)
	}
	read, list := p.Steps[0], p.Steps[1]
	if read.Kind != event.KindTool || read.Tool != "fs/read_text_file" ||
		string(read.Args) != `{"head":10,"opts":{"deep":[1,"two"]},"path":"/srv/data/notes.md"}` {
		t.Errorf("read: %+v (args %s)", read, read.Args)
	}
	if list.Kind != event.KindTool || string(list.Args) != "{}" {
		t.Errorf("list: %+v (args %s)", list, list.Args)
	}
}

func TestToolStepErrors(t *testing.T) {
	_, err := Parse("bad.yaml", []byte(`goal: bad
steps:
  - id: a
    kind: tool
    run: ls
  - id: b
    run: ls
    args: {x: 1}
  - id: c
    tool: read_text_file
  - id: d
    tool: fs/read
    args: [1, 2]
  - id: e
    tool: fs/read
    args: {password: hunter2hunter2hunter2}
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"bad.yaml:3:5: steps[0].tool",
		"tool step needs tool",
		"tool step has run",
		"bad.yaml:8:11: steps[1].args: shell step has args",
		`tool "read_text_file": name a tool as plugin/tool`,
		"args must be a mapping",
		"steps[4].args: args holds what looks like a secret",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
