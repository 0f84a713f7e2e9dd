package cli

import (
	"fmt"
	"os"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) keysNATSConfigCmd() *cobra.Command {
	var from, resolverDir, out string
	cmd := &cobra.Command{
		Use:   "nats-config --from DIR --resolver-dir DIR [--out FILE]",
		Short: "Write the nats-server configuration that trusts the cluster (offline)",
		Long: `Write the part of a nats-server configuration that puts an external NATS
server in operator mode for this cluster: the NATS operator and accounts
derived from the cluster's root (read from DIR/nats-bundle.json, which
'agentctl keys init', 'agentctl node enroll' and agentd's first start
write; it is public), a full account resolver keeping account JWTs (and
revocations) in --resolver-dir, and the control line agentic's users need.
Include it in every server's configuration; only identities the root
issued connect, each with its role's permissions (docs/security.md).`,
		Example: `  agentctl keys nats-config --from ./cluster-root --resolver-dir /var/lib/nats/jwt --out /etc/nats/agentic-auth.conf
  # in /etc/nats/nats-server.conf:
  include agentic-auth.conf`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if from == "" || resolverDir == "" {
				return usagef("keys nats-config: --from and --resolver-dir are required")
			}
			b, err := natsauth.LoadBundle(from)
			if err != nil {
				return api.WithHint(fmt.Errorf("keys nats-config: %w", err),
					"DIR is a directory 'agentctl keys init' or 'agentctl node enroll' wrote, or an agentd data directory")
			}
			conf, err := natsauth.ServerConfig(b, resolverDir)
			if err != nil {
				return fmt.Errorf("keys nats-config: %w", err)
			}
			if out == "" {
				_, err = fmt.Fprint(a.env.Stdout, conf)
				return err
			}
			if err := os.WriteFile(out, []byte(conf), 0o644); err != nil {
				return fmt.Errorf("keys nats-config: %w", err)
			}
			fmt.Fprintf(a.env.Stdout, "wrote %s: include it in every nats-server's configuration\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "directory holding nats-bundle.json (a root, node or data directory)")
	f.StringVar(&resolverDir, "resolver-dir", "", "where the server keeps account JWTs (one per server)")
	f.StringVar(&out, "out", "", "file to write (default: standard output)")
	return cmd
}
