package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
)

// nodeProbeTimeout caps how long version waits for a node.
const nodeProbeTimeout = 2 * time.Second

// versionInfo is what version prints with -o json.
type versionInfo struct {
	Agentctl  string        `json:"agentctl"`
	Go        string        `json:"go"`
	Node      *api.NodeInfo `json:"node"`
	NodeError string        `json:"node_error,omitempty"`
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version and the version of a node",
		Long: `Print agentctl's version, and the version of the node that answers
node.info if one is reachable (an unreachable cluster is not an error
here).`,
		Example: `  agentctl version
  agentctl version -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Agentctl: a.version(), Go: runtime.Version()}
			if info, err := a.probeNode(cmd.Context()); err != nil {
				v.NodeError = err.Error()
			} else {
				v.Node = info
			}
			if a.output != formatText {
				return a.writeJSON(v)
			}
			fmt.Fprintf(a.env.Stdout, "agentctl %s (%s)\n", v.Agentctl, v.Go)
			if v.Node != nil {
				fmt.Fprintf(a.env.Stdout, "node     %s %s (roles %v, nats %s)\n", v.Node.ID, v.Node.Version, v.Node.Roles, dash(v.Node.NATS))
				switch {
				case v.Node.Leader != "":
					fmt.Fprintf(a.env.Stdout, "leader   %s (epoch %d)\n", v.Node.Leader, v.Node.Epoch)
				case v.Node.LeaderReason != "":
					fmt.Fprintf(a.env.Stdout, "leader   none: %s\n", v.Node.LeaderReason)
				}
			} else {
				fmt.Fprintf(a.env.Stdout, "node     unreachable: %s\n", v.NodeError)
			}
			return nil
		},
	}
}

func (a *app) probeNode(ctx context.Context) (*api.NodeInfo, error) {
	t := min(a.timeout, nodeProbeTimeout)
	nc, err := nats.Connect(a.server, nats.Name("agentctl"), nats.Timeout(t), nats.MaxReconnects(0))
	if err != nil {
		return nil, fmt.Errorf("cannot reach NATS at %s: %w", a.server, err)
	}
	defer nc.Close()
	return api.NewClient(nc, t).NodeInfo(ctx)
}

func (a *app) version() string {
	if a.env.Version != "" {
		return a.env.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
