package main_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// The end-to-end tests build agentd and agentctl once, run agentd as a
// real process (embedded JetStream, Pebble, its own data dir and loopback
// ports) and drive it with the agentctl binary, as an operator would.
// They are slow (processes, fsyncs, sleeps inside steps) and skipped under
// -short. A failed test shows the last lines of each agentd's log; with
// AGENTIC_E2E_KEEP_LOGS=DIR it also copies each whole log into DIR (the
// test's temp dir, which holds them, is removed when the test ends).

// modulePath is the module the binaries are built from.
const modulePath = "github.com/agentic-dev/agentic"

// bin holds the paths TestMain built; empty under -short.
var bin struct {
	agentd   string
	agentctl string
	// natsServer is nats-server, built from the module this project
	// depends on, for the tests of a NATS cluster.
	natsServer string
	root       string // the module root
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("cmd/agentd: -short: skipping the end-to-end tests (they build agentd and agentctl and run them as processes)")
		goleak.VerifyTestMain(m)
		return
	}
	dir, err := os.MkdirTemp("", "agentic-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// requireE2E skips t under -short (TestMain built nothing then).
func requireE2E(t *testing.T) {
	t.Helper()
	if testing.Short() || bin.agentd == "" {
		t.Skip("end-to-end test: skipped under -short")
	}
}

// buildBinaries builds ./cmd/agentd and ./cmd/agentctl into dir.
func buildBinaries(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build the binaries: %w", err)
	}
	// Child binaries are built without -race (the e2e tests run them as
	// processes; the race detector would only slow them down), and
	// nats-server from the module's own dependency, so its version is the
	// one agentd embeds.
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/agentd", "./cmd/agentctl", "github.com/nats-io/nats-server/v2")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/agentd ./cmd/agentctl nats-server in %s: %w\n%s", root, err, out.String())
	}
	bin.natsServer = filepath.Join(dir, "nats-server")
	bin.root = root
	bin.agentd = filepath.Join(dir, "agentd")
	bin.agentctl = filepath.Join(dir, "agentctl")
	return nil
}

// moduleRoot walks up from the working directory to the go.mod of
// modulePath.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}
