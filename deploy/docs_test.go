package deploy_test

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestAgentdCommandsInDocs: every agentd command line shown in
// docs/deploy.md and deploy/README.md, and run by deploy/demo.sh and
// deploy/demo-cluster.sh, uses flags agentd has; the scripts are valid
// shell.
func TestAgentdCommandsInDocs(t *testing.T) {
	known := agentdFlags(t)
	lineRE := regexp.MustCompile(`(?:^|[\s/"])agentd"?\s+(--.*)$`)
	for _, f := range []string{"../docs/deploy.md", "README.md", "demo.sh", "demo-cluster.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		n := 0
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + lines[i]
			}
			m := lineRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			n++
			for _, flag := range flagNames(strings.Fields(m[1])) {
				if !known[flag] {
					t.Errorf("%s:%d: agentd has no flag --%s", f, i+1, flag)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no agentd command line found (the test would check nothing)", f)
		}
	}
	if runtime.GOOS != "windows" {
		for _, f := range []string{"demo.sh", "demo-cluster.sh"} {
			if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
				t.Errorf("bash -n %s: %v\n%s", f, err, out)
			}
		}
	}
}
