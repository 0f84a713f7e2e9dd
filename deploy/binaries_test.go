package deploy_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/config"
	"github.com/spf13/pflag"
)

var bins struct {
	once            sync.Once
	dir, err        string
	agentd, agentcl string
}

// binaries builds agentd and agentctl from this tree once per test run.
func binaries(t *testing.T) (agentd, agentctl string) {
	t.Helper()
	bins.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			bins.err = "no go command to build agentd and agentctl: " + err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "agentic-deploy-test-")
		if err != nil {
			bins.err = err.Error()
			return
		}
		bins.dir = dir
		cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/agentd", "./cmd/agentctl")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Sprintf("go build: %v\n%s", err, out)
			return
		}
		bins.agentd, bins.agentcl = filepath.Join(dir, "agentd"), filepath.Join(dir, "agentctl")
	})
	if bins.err != "" {
		t.Fatal(bins.err)
	}
	return bins.agentd, bins.agentcl
}

var flagRE = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)`)

// helps caches helpFlags by command line.
var helps sync.Map

// helpFlags runs a binary's --help and returns the long flags it lists.
func helpFlags(t *testing.T, bin string, args ...string) map[string]bool {
	t.Helper()
	key := bin + " " + strings.Join(args, " ")
	if v, ok := helps.Load(key); ok {
		return v.(map[string]bool)
	}
	out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s --help: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("%s %s --help lists no flags:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
	helps.Store(key, flags)
	return flags
}

func agentdFlags(t *testing.T) map[string]bool {
	t.Helper()
	agentd, _ := binaries(t)
	return helpFlags(t, agentd)
}

// flagNames are the long flags of args ("--name=x", "--name x").
func flagNames(args []string) []string {
	var out []string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			out = append(out, name)
		}
	}
	return out
}

// agentdRun is what an agentd command line amounts to.
type agentdRun struct {
	cfg        config.Config
	configFile string
	drain      time.Duration
}

// resolveAgentd checks that every flag of args is one `agentd --help`
// lists, then resolves args exactly as agentd does (config.Resolve over the
// file --config names, through configFile when it is given to map the
// installed path to the repository's file) and validates the result.
func resolveAgentd(t *testing.T, where string, args []string, files map[string]string) agentdRun {
	t.Helper()
	known := agentdFlags(t)
	for _, f := range flagNames(args) {
		if !known[f] {
			t.Errorf("%s: agentd has no flag --%s", where, f)
		}
	}
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "")
	drain := fs.Duration("drain-timeout", 30*time.Second, "")
	scratch := config.Default()
	scratch.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s: agentd %s: %v", where, strings.Join(args, " "), err)
	}
	path := *cfgPath
	if path != "" {
		repo, ok := files[path]
		if !ok {
			t.Fatalf("%s: agentd --config %s: no file of deploy/ is installed there", where, path)
		}
		path = repo
	}
	// A gossip key file named by the configuration lives on the target
	// machine (docs/deploy.md makes it); agentd reads it at start, so the
	// check stands in a real key at a path of this machine.
	var keyFile string
	if path != "" {
		if c, err := config.Load(path); err == nil && c.GossipKeyFile != "" && !fs.Changed("gossip-key-file") {
			keyFile = c.GossipKeyFile
			if _, err := os.Stat(keyFile); err != nil {
				stand := filepath.Join(t.TempDir(), "gossip.key")
				if err := os.WriteFile(stand, []byte(base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := fs.Set("gossip-key-file", stand); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cfg, err := config.Resolve(path, nil, fs)
	if err != nil {
		t.Fatalf("%s: agentd %s: %v", where, strings.Join(args, " "), err)
	}
	if keyFile != "" {
		cfg.GossipKeyFile = keyFile
	}
	return agentdRun{cfg: cfg, configFile: *cfgPath, drain: *drain}
}
