// Package deploy_test reads every file of deploy/ as the program that
// would read it in production reads it — nats-server's configuration
// parser, agentd's configuration and flags, yaml.v3 for Compose and the
// Helm chart's manifests, a small unit-file reader for systemd — and
// checks what the files say about each other: ports, paths, names,
// roles, the flags of agentd and agentctl (asked of the binaries built
// from this tree), and timeouts that must cover one another. No Docker
// engine, Kubernetes or systemd is needed.
package deploy_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
