// Command agentctl is the control CLI of an agentic cluster; see
// docs/cli.md and 'agentctl --help'.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentic-dev/agentic/cmd/agentctl/internal/cli"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Version: version})
	stop()
	os.Exit(code)
}
