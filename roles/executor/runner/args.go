package runner

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// programArgs is args (Spec.Args) with its program's path resolved: a
// name without '/' is looked up in agentd's PATH, as a shell would.
func programArgs(args []string) ([]string, error) {
	out := slices.Clone(args)
	if !strings.Contains(out[0], "/") {
		p, err := exec.LookPath(out[0])
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", out[0], err)
		}
		out[0] = p
	}
	for _, a := range out {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("program %s: an argument holds a NUL byte", out[0])
		}
	}
	return out, nil
}

// sandboxProgram is the argv of the helper running argv, a program
// without a shell, confined to writing beneath dirs.
func sandboxProgram(dirs, argv []string) []string {
	out := make([]string, 0, len(dirs)+len(argv)+2)
	out = append(out, sandboxArg0)
	out = append(out, dirs...)
	out = append(out, "--")
	return append(out, argv...)
}
