package event_test

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// golden reads the non-comment lines of a testdata file.
func golden(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func row(s event.Spec) string {
	roles := "-"
	if len(s.Roles) > 0 {
		roles = strings.Join(s.Roles, ",")
	}
	return string(s.Type) + " " + strconv.Itoa(s.Since) + " " + roles
}

// The event-type table only grows: every pinned row is still there, at its
// place and unchanged (no type removed, renamed, moved to another version
// or narrowed in its roles), and every new row is pinned by appending it to
// testdata/types.golden.
func TestTypeTableIsAppendOnly(t *testing.T) {
	pinned := golden(t, "types.golden")
	types := event.Types()
	for i, want := range pinned {
		if i >= len(types) {
			t.Fatalf("pinned row %d %q was removed from the event-type table: types are append-only", i+1, want)
		}
		if got := row(types[i]); got != want {
			t.Errorf("row %d is %q, pinned as %q: a type is never renamed, removed or narrowed; append a row (with a later Since) to widen its roles", i+1, got, want)
		}
	}
	for i := len(pinned); i < len(types); i++ {
		t.Errorf("row %d %q is not pinned: append it to testdata/types.golden", i+1, row(types[i]))
	}
}

// A later row for a type may only widen its roles, from a later version.
func TestTypeRowsOnlyWiden(t *testing.T) {
	types := event.Types()
	for i, later := range types {
		for _, earlier := range types[:i] {
			if earlier.Type != later.Type {
				continue
			}
			if later.Since <= earlier.Since {
				t.Errorf("%s: a later row applies from version %d, not after %d", later.Type, later.Since, earlier.Since)
			}
			for _, r := range earlier.Roles {
				if !slices.Contains(later.Roles, r) {
					t.Errorf("%s: version %d drops role %s", later.Type, later.Since, r)
				}
			}
		}
	}
}

func TestRejectCodesAreAppendOnly(t *testing.T) {
	pinned := golden(t, "reject_codes.golden")
	codes := event.RejectCodes()
	for i, want := range pinned {
		if i >= len(codes) || string(codes[i]) != want {
			t.Fatalf("code %d is not the pinned %q (codes: %v): codes are never renamed, removed or reordered", i+1, want, codes)
		}
	}
	for i := len(pinned); i < len(codes); i++ {
		t.Errorf("code %q is not pinned: append it to testdata/reject_codes.golden", codes[i])
	}
	seen := map[event.RejectCode]bool{}
	for _, c := range codes {
		if seen[c] || !c.Valid() {
			t.Errorf("code %q repeated or invalid", c)
		}
		seen[c] = true
	}
	if event.RejectCode("bad signature").Valid() {
		t.Error("free text passes as a code")
	}
}

// The categories a role may publish follow from the role table.
func TestMayPublish(t *testing.T) {
	v1 := event.TypesAt(1)
	cases := []struct {
		category string
		roles    []string
		want     bool
	}{
		{"task", []string{event.RoleExecutor}, true},
		{"executor", []string{event.RoleExecutor}, true},
		{"plan", []string{event.RoleExecutor}, false},
		{"task", []string{event.RoleOrchestrator}, true},
		{"plan", []string{event.RolePlanner}, true},
		{"cluster", []string{event.RoleOperator}, true},
		{"goal", []string{event.RoleUI, event.RoleMemory}, false},
		{"memory", []string{event.RoleUI, event.RoleMemory}, true},
		{"event", []string{event.RoleOrchestrator}, false}, // ledger-local
		{"ledger", event.NodeRoles, false},
		{"nothing", event.NodeRoles, false},
	}
	for _, c := range cases {
		if got := event.MayPublish(v1, c.category, c.roles); got != c.want {
			t.Errorf("MayPublish(%s, %v) = %v, want %v", c.category, c.roles, got, c.want)
		}
	}
}

// Lookup takes the last row that applies, so a type's roles can widen from
// a later version without editing an earlier row.
func TestLookupTakesTheNewestRow(t *testing.T) {
	specs := append(event.TypesAt(1),
		event.Spec{Type: "task.progress", Roles: []string{event.RoleExecutor}, Since: 2},
		event.Spec{Type: "task.progress", Roles: []string{event.RoleExecutor, event.RoleOrchestrator}, Since: 3},
	)
	if _, ok := event.Lookup(event.TypesAt(1), "task.progress"); ok {
		t.Fatal("a version-1 table knows task.progress")
	}
	s, ok := event.Lookup(specs, "task.progress")
	if !ok || !s.Permits([]string{event.RoleOrchestrator}) || s.Since != 3 {
		t.Fatalf("Lookup = %+v %v, want the version-3 row", s, ok)
	}
	if s, _ := event.Lookup(specs[:len(specs)-1], "task.progress"); s.Permits([]string{event.RoleOrchestrator}) {
		t.Fatal("the version-2 row lets an orchestrator emit task.progress")
	}
	if !event.Known(event.Rejected) || event.Permit(event.Rejected, event.NodeRoles) {
		t.Fatal("ledger-local types are known and emitted by nobody")
	}
	if !event.Permit(event.TaskStarted, []string{event.RoleExecutor}) || event.Permit(event.TaskStarted, []string{event.RolePlanner}) {
		t.Fatal("Permit disagrees with the table")
	}
	if got := event.Type("task.started").Category(); got != "task" {
		t.Fatalf("category %q", got)
	}
}
