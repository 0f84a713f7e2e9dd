package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
)

// ErrForeignRoot marks a credential issued by a root the cluster does not
// trust: another cluster's operator.creds.
var ErrForeignRoot = errors.New("credential from another cluster")

// rootAnswer is the cluster's root fingerprint as node.info answered it,
// asked once per invocation.
type rootAnswer struct {
	asked bool
	root  string // "" from a node older than NodeInfo.Root
	err   error
}

// foreignRootError says which root the credential came from and which one
// the cluster trusts.
type foreignRootError struct {
	path, server   string
	creds, cluster string
}

func (e *foreignRootError) Error() string {
	return fmt.Sprintf("this credential (%s) was issued by root %s but the cluster at %s trusts root %s: use that cluster's operator.creds (agentctl keys operator NAME --root DIR --out FILE, where DIR holds its root.key)",
		e.path, e.creds, e.server, e.cluster)
}

func (e *foreignRootError) Unwrap() error { return ErrForeignRoot }

// clusterRoot asks a node which root the cluster trusts, once.
func (a *app) clusterRoot(ctx context.Context) (string, error) {
	if a.root.asked {
		return a.root.root, a.root.err
	}
	nc, err := a.conn()
	if err != nil {
		return "", err
	}
	info, err := api.NewClient(nc, a.timeout).NodeInfo(ctx)
	a.root.asked = true
	if err != nil {
		a.root.err = errAskRoot(err)
		return "", a.root.err
	}
	a.root.root = info.Root
	return a.root.root, nil
}

// compareRoot fails with a foreignRootError when creds (the root of the
// creds file at path) is not the root the cluster trusts. A node too old
// to say its root cannot be compared with: that passes, and for a write
// the ledger's answer (awaitAccepted) still decides.
func (a *app) compareRoot(ctx context.Context, path string, creds *trust.Root) error {
	cluster, err := a.clusterRoot(ctx)
	if err != nil {
		return err
	}
	if cluster == "" || cluster == creds.KeyID() {
		return nil
	}
	return api.WithHint(&foreignRootError{path: path, server: a.server, creds: creds.KeyID(), cluster: cluster},
		"agentctl version shows the cluster's root and your credential's; --creds or AGENTIC_CREDS picks the file")
}

// checkWriteTrust runs before anything is published: the signing
// credential must come from the root the cluster trusts, and a node must
// say which root that is.
func (a *app) checkWriteTrust(ctx context.Context, root *trust.Root) error {
	if err := a.compareRoot(ctx, a.credsPath(), root); err != nil {
		return fmt.Errorf("%w (nothing was published)", err)
	}
	return nil
}

// checkReadTrust runs before a query: a credentials file that is present
// (even expired) must come from the root the cluster trusts, so that one
// cluster's data is never shown under a credential it did not issue. With
// no credentials file there is nothing to compare (reads need none yet),
// and when no node says its root the query itself reports why.
func (a *app) checkReadTrust(ctx context.Context) error {
	if a.readChecked {
		return nil
	}
	path := a.credsPath()
	root, err := a.credsRoot(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		a.readChecked = true
		return nil
	case err != nil:
		return api.WithHint(fmt.Errorf("operator credentials: %w", err),
			"pass --creds DATA/operator.creds of the cluster, or set AGENTIC_CREDS")
	}
	if _, err := a.clusterRoot(ctx); err != nil {
		a.readChecked = true
		return nil
	}
	if err := a.compareRoot(ctx, path, root); err != nil {
		return err
	}
	a.readChecked = true
	return nil
}

// context is the command's context, for the checks made on the way to a
// connection (Background before a command runs).
func (a *app) context() context.Context {
	if a.ctx != nil {
		return a.ctx
	}
	return context.Background()
}

// errAskRoot is the error of a node.info that did not answer.
func errAskRoot(err error) error {
	return fmt.Errorf("ask the cluster which root it trusts: %w", err)
}
