package embedded

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentic-dev/agentic/bus/natsauth"
)

// OperatorOptions sets the operator mode of a nats-server from a verified
// bundle: the operator trusted, the system account, and a full account
// resolver storing account JWTs in resolverDir (`resolver: {type: full,
// dir: …}`), seeded with the bundle's accounts unless it already holds
// newer ones. Account updates (revocations) come in on
// $SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE (PushAccount), from a system
// account user on any server of the cluster; each server stores them in
// its directory, so they outlive an idle account and a restart.
// (nats-server's memory resolver does not: it applies a pushed update to
// the live account only, and once the account's last client leaves, the
// account is loaded again from the preloaded JWT — without the
// revocation.) Anonymous clients are refused: every
// connection must present a user JWT of the AGENTIC account and sign the
// server's nonce with the user key.
func OperatorOptions(opts *server.Options, b natsauth.Bundle, resolverDir string) error {
	v, err := b.Verify("")
	if err != nil {
		return err
	}
	if resolverDir == "" {
		return errors.New("natsauth: the account resolver needs a directory")
	}
	if err := os.MkdirAll(resolverDir, 0o700); err != nil {
		return fmt.Errorf("natsauth: account resolver dir: %w", err)
	}
	res, err := server.NewDirAccResolver(resolverDir, 0, 0, server.NoDelete)
	if err != nil {
		return fmt.Errorf("natsauth: account resolver in %s: %w", resolverDir, err)
	}
	// Store keeps a JWT only if it is newer than the one stored (as
	// resolver_preload does with a full resolver): a revocation pushed
	// since survives the bundle.
	for key, j := range map[string]string{v.SystemAccount.Subject: b.SystemAccount, v.Account.Subject: b.Account} {
		if err := res.Store(key, j); err != nil {
			res.Close()
			return fmt.Errorf("natsauth: store account %s: %w", key, err)
		}
	}
	opts.TrustedOperators = []*jwt.OperatorClaims{v.Operator}
	opts.TrustedKeys = nil
	opts.AccountResolver = res
	opts.SystemAccount = v.SystemAccount.Subject
	opts.NoSystemAccount = false
	// A client's CONNECT carries its user JWT, which lists its
	// permissions subject by subject: larger than nats-server's default
	// control line (4 KiB). An external server needs the same setting
	// (max_control_line; docs/security.md).
	if opts.MaxControlLine < natsauth.MaxControlLine {
		opts.MaxControlLine = natsauth.MaxControlLine
	}
	return nil
}
