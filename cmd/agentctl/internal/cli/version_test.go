package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestVersion(t *testing.T) {
	h := newHarness(t).withNode()
	r := h.run("version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agentctl v9.9.9-test (go") || !strings.Contains(r.stdout, "node     node-a v1.2.3") ||
		!strings.Contains(r.stdout, "\nleader   none: node-b (epoch 4) has not renewed its lease") {
		t.Fatalf("version = %+v", r)
	}
	r = h.run("version", "-o", "json")
	got := decodeJSON[versionInfo](t, r.stdout)
	if got.Agentctl != "v9.9.9-test" || got.Node == nil || got.Node.ID != "node-a" {
		t.Errorf("version json = %+v", r)
	}

	// Without a node, version still works and says so.
	bare := newHarness(t)
	r = bare.run("version")
	if r.code != 0 || !strings.Contains(r.stdout, "node     unreachable: no agentd node answers") {
		t.Errorf("version without node = %+v", r)
	}
}

func TestCompletion(t *testing.T) {
	h := newHarness(t)
	r := h.run("completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "agentctl") {
		t.Errorf("completion bash = exit %d, %d bytes", r.code, len(r.stdout))
	}
}

// Every command teaches: a description and an Example section.
func TestHelpHasExamples(t *testing.T) {
	root := newApp(Env{}).rootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "completion" || c.Name() == "help" {
			return
		}
		if c.Short == "" || c.Long == "" {
			t.Errorf("%s: no description", c.CommandPath())
		}
		if c.HasSubCommands() {
			for _, s := range c.Commands() {
				walk(s)
			}
		} else if c.Example == "" {
			t.Errorf("%s: no Example", c.CommandPath())
		}
	}
	walk(root)
	h := newHarness(t)
	r := h.run("goal", "submit", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--wait") {
		t.Errorf("goal submit --help = %+v", r)
	}
}
