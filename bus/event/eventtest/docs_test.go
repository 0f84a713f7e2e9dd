package eventtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const protocolDoc = "../../../docs/protocol.md"

// backticked are the `names` of a line of the protocol doc.
var backticked = regexp.MustCompile("`([^`]+)`")

// TestProtocolDocListsEveryStepField: the step field table of
// docs/protocol.md ("### The plan") has a row for every field of
// event.Step and none other.
func TestProtocolDocListsEveryStepField(t *testing.T) {
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| step field | meaning |")
	if !ok {
		t.Fatal("docs/protocol.md has no \"| step field | meaning |\" table")
	}
	var rows []string
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		rows = append(rows, backticked.FindStringSubmatch(line)[1])
	}
	want := StepFields()
	for _, f := range want {
		if !slices.Contains(rows, f) {
			t.Errorf("docs/protocol.md's step field table has no row for %q (a field of %s): add one", f, StepDecl)
		}
	}
	for _, f := range rows {
		if !slices.Contains(want, f) {
			t.Errorf("docs/protocol.md's step field table has a row for %q, which event.Step has no JSON field for", f)
		}
	}
}

// TestProtocolDocListsEveryStatus: the statuses table of docs/protocol.md
// shows every run, step and task status bus/event/status.go declares, and
// none other.
func TestProtocolDocListsEveryStatus(t *testing.T) {
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	declared := statusConstants(t)
	for typ, row := range map[string]string{
		"RunStatus":  "| run status (`event.RunStatus`)",
		"StepStatus": "| step status (`event.StepStatus`",
		"TaskStatus": "| task status (`event.TaskStatus`",
	} {
		i := strings.Index(string(b), row)
		if i < 0 {
			t.Errorf("docs/protocol.md has no row %q", row)
			continue
		}
		line, _, _ := strings.Cut(string(b[i:]), "\n")
		cells := strings.Split(line, "|")
		var shown []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			shown = append(shown, m[1])
		}
		for _, s := range declared[typ] {
			if !slices.Contains(shown, s) {
				t.Errorf("docs/protocol.md's %s row lacks %q (bus/event/status.go): add it", typ, s)
			}
		}
		for _, s := range shown {
			if !slices.Contains(declared[typ], s) {
				t.Errorf("docs/protocol.md's %s row shows %q, which bus/event/status.go does not declare", typ, s)
			}
		}
	}
}

// statusConstants reads the string constants of bus/event/status.go by
// type name.
func statusConstants(t *testing.T) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../status.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || len(vs.Values) != 1 {
				continue
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[id.Name] = append(out[id.Name], s)
			}
		}
	}
	return out
}
