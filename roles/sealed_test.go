package roles_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// startsProcesses are the packages that may start a process: the
// executor's runner (the steps), the notify hook (an operator's
// notification command, not a step), the tmpfs test kit (it mounts a
// file system for tests) and ledger/history (`agentctl keys
// verify-history` runs `agentd verify-history`, the installation's own
// binary, so that agentctl does not link the ledger; not a step).
var startsProcesses = []string{"roles/executor/runner", "node/notify", "internal/diskspace/tmpfs", "ledger/history"}

// noFiles are the packages that judge, plan and schedule: they never write
// a file, so nothing a step does can happen outside the executor.
var noFiles = []string{"roles", "bus/event", "bus/envelope", "bus/redact", "node/api", "node/nodes", "node/settings"}

// fileWriters are the os functions that change the file system.
var fileWriters = []string{"WriteFile", "Create", "CreateTemp", "OpenFile", "Mkdir", "MkdirAll", "MkdirTemp",
	"Remove", "RemoveAll", "Rename", "Symlink", "Link", "Chmod", "Chown", "Lchown", "Truncate", "OpenRoot"}

// processStarters are the functions and types, by package, that start
// a process: the MCP SDK's CommandTransport starts a plugin's server with
// os/exec, outside the runner's rules (user, environment, limits,
// process group), so plugin servers go through runner.StartServer.
var processStarters = map[string][]string{
	"os":      {"StartProcess"},
	"syscall": {"ForkExec", "Exec", "StartProcess"},
	"github.com/modelcontextprotocol/go-sdk/mcp": {"CommandTransport", "NewCommandTransport"},
}

// switchesUsers are the packages that may change the identity a process
// or thread acts with: the executor's runner, which runs a step's shell as
// the step user and — runner.AsUser, a thread of its own with the user's
// file system ids (setfsuid) — the executor's file edits as that user.
// Anywhere else such a call could act for a step outside the runner's
// rules (run_as, RefuseRoot).
var switchesUsers = []string{"roles/executor/runner"}

// userSwitchers are the functions, by package, that change the user or
// groups a process or thread acts as.
var userSwitchers = map[string][]string{
	"syscall": {"Setuid", "Setgid", "Setreuid", "Setregid", "Setresuid", "Setresgid", "Setgroups", "Setfsuid", "Setfsgid"},
	"golang.org/x/sys/unix": {"Setuid", "Setgid", "Setreuid", "Setregid", "Setresuid", "Setresgid", "Setgroups", "Setfsuid", "Setfsgid",
		"SetfsuidRetUid", "SetfsgidRetGid"},
}

// TestStepEffectsStayInTheExecutor is the architecture test of the safety
// policy: only the executor runs a step, so no other package starts a
// process (os/exec, os.StartProcess, syscall.ForkExec, the MCP SDK's
// CommandTransport: plugin servers too start in the runner) — but those listed
// with a reason in startsProcesses — and the packages that judge, plan and
// schedule (noFiles, and every roles/ package but the executor's) write no
// file; and only the runner switches users (switchesUsers). A bypass of
// the policy cannot then hide in another package: it fails this test.
func TestStepEffectsStayInTheExecutor(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		mayStart := slices.Contains(startsProcesses, rel)
		maySwitch := slices.Contains(switchesUsers, rel)
		mayWrite := !slices.Contains(noFiles, rel) && (!strings.HasPrefix(rel, "roles/") || strings.HasPrefix(rel, "roles/executor"))
		names := map[string]string{} // local name → import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			names[name] = p
			if p == "os/exec" && !mayStart {
				t.Errorf("%s imports os/exec: only the executor runs steps (add a package to startsProcesses only with a reason)", rel+"/"+filepath.Base(path))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			pkg := names[x.Name]
			switch {
			case slices.Contains(processStarters[pkg], sel.Sel.Name) && !mayStart:
				t.Errorf("%s calls %s.%s: only the executor runs steps (and plugin servers, through runner.StartServer)", rel+"/"+filepath.Base(path), pkg, sel.Sel.Name)
			case slices.Contains(userSwitchers[pkg], sel.Sel.Name) && !maySwitch:
				t.Errorf("%s calls %s.%s: only the executor's runner acts as a step user (add a package to switchesUsers only with a reason)", rel+"/"+filepath.Base(path), pkg, sel.Sel.Name)
			case pkg == "os" && slices.Contains(fileWriters, sel.Sel.Name) && !mayWrite:
				t.Errorf("%s calls os.%s: %s judges, plans or schedules, and writes no file", rel+"/"+filepath.Base(path), sel.Sel.Name, rel)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: is the module root %s?", checked, root)
	}
}
