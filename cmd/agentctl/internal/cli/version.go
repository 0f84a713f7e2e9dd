package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	// Creds is the credentials file this invocation would use and the
	// root that issued it (absent when there is no such file).
	Creds *credsInfo `json:"creds,omitempty"`
}

// credsInfo is the credentials file version reports.
type credsInfo struct {
	Path  string `json:"path"`
	Root  string `json:"root,omitempty"`
	Error string `json:"error,omitempty"`
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version and the version of a node",
		Long: `Print agentctl's version, and the version of the node that answers
node.info if one is reachable (an unreachable cluster is not an error
here), with the fingerprint of the root the cluster trusts and of the root
that issued your credentials file. A credential from another cluster's
root, or one the cluster's NATS refuses, is an error (exit 1), after the
report.`,
		Example: `  agentctl version
  agentctl version -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Agentctl: a.version(), Go: runtime.Version()}
			var refused error
			if info, err := a.probeNode(cmd.Context()); err != nil {
				v.NodeError = err.Error()
				if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
					refused = err // reported after the version, as a mismatch is
				}
			} else {
				v.Node = info
			}
			v.Creds = a.credsInfo()
			mismatch := refused
			if c := v.Creds; c != nil && c.Root != "" && v.Node != nil && v.Node.Root != "" && v.Node.Root != c.Root {
				mismatch = api.WithHint(&foreignRootError{path: c.Path, server: a.server, creds: c.Root, cluster: v.Node.Root},
					"--creds or AGENTIC_CREDS picks the file")
			}
			if a.output != formatText {
				if err := a.writeJSON(v); err != nil {
					return err
				}
				return mismatch
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
				fmt.Fprintf(a.env.Stdout, "root     %s (the root the cluster trusts)\n", dash(v.Node.Root))
			} else {
				fmt.Fprintf(a.env.Stdout, "node     unreachable: %s\n", v.NodeError)
			}
			switch {
			case v.Creds == nil:
				fmt.Fprintf(a.env.Stdout, "creds    none at %s\n", a.credsPath())
			case v.Creds.Error != "":
				fmt.Fprintf(a.env.Stdout, "creds    %s: %s\n", v.Creds.Path, v.Creds.Error)
			default:
				fmt.Fprintf(a.env.Stdout, "creds    %s (issued by root %s)\n", v.Creds.Path, v.Creds.Root)
			}
			return mismatch
		},
	}
}

// credsInfo reads the root of the credentials file this invocation would
// use; nil when there is no such file.
func (a *app) credsInfo() *credsInfo {
	path := a.credsPath()
	root, err := a.credsRoot(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &credsInfo{Path: path, Error: err.Error()}
	}
	return &credsInfo{Path: path, Root: root.KeyID()}
}

func (a *app) probeNode(ctx context.Context) (*api.NodeInfo, error) {
	t := min(a.timeout, nodeProbeTimeout)
	nc, err := a.dial(t)
	if err != nil {
		return nil, err
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
