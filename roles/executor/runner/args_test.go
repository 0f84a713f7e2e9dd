package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// A program run with Args gets its arguments as given — no shell reads
// them, so quotes, globs, ';' and $ reach it untouched — in the step's
// directory and environment; a wrong spec is a clear failure.
func TestRunArgsWithoutShell(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "x")
	var out strings.Builder
	arg := "a b; touch " + marker + " $HOME *"
	res := Run(context.Background(), Spec{Kind: event.KindShell, Args: []string{"printf", "%s|%s", arg, "$X"}, Cwd: dir},
		Options{}, nil, func(stream string, b []byte) {
			if stream == StreamStdout {
				out.Write(b)
			}
		})
	if res.Status != event.TaskSucceeded {
		t.Fatalf("result %+v", res)
	}
	if got, want := out.String(), arg+"|$X"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a shell ran the argument")
	}
	if res.Cwd != dir {
		t.Errorf("cwd %s", res.Cwd)
	}
	res = Run(context.Background(), Spec{Kind: event.KindShell, Args: []string{"false"}}, Options{}, nil, nil)
	if res.Status != event.TaskFailed || res.ExitCode != 1 || res.Class != event.ClassLogic {
		t.Errorf("false: %+v", res)
	}
	for _, bad := range []Spec{
		{Kind: event.KindShell, Args: []string{"true"}, Command: "true"},
		{Kind: event.KindShell, Args: []string{"true"}, Check: "true"},
		{Kind: event.KindShell, Args: []string{"no-such-program-here"}},
	} {
		if res := Run(context.Background(), bad, Options{}, nil, nil); res.Status != event.TaskFailed || res.Class != event.ClassLogic || res.Error == "" {
			t.Errorf("%+v: %+v", bad, res)
		}
	}
}
