package cli

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/spf13/cobra"
)

func (a *app) keysAPITokenCmd() *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "api-token [--ttl 15m]",
		Short: "Print a short-lived token for a node's HTTP API",
		Long: `Print a bearer token for the HTTP API of a node that serves it on an
address that is not loopback (http_listen): a JWT signed with the key of
the operator credentials (--creds) that carries the operator's
credential; the node verifies it with the cluster root and, on every
request, checks the credential against its ledger's revocations: once the
operator is revoked (agentctl operator revoke) every token of theirs is
refused, whenever it was made. It works offline and lasts --ttl (at most
1h; a node refuses a longer-lived token however it was made).`,
		Example: `  curl -H "Authorization: Bearer $(agentctl keys api-token)" http://node-a:8080/api/runs`,
		Args:    args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			id, _, err := a.identity()
			if err != nil {
				return err
			}
			tok, err := trust.APIToken(id, ttl, time.Now())
			if err != nil {
				return usagef("keys api-token: %v", err)
			}
			_, err = fmt.Fprintln(a.env.Stdout, tok)
			return err
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", trust.DefaultAPITokenTTL, "how long the token is valid (at most 1h)")
	return cmd
}
