package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

// Defaults of the global flags.
const (
	DefaultServer  = "nats://127.0.0.1:4222"
	DefaultTimeout = 5 * time.Second
)

const startHint = "is agentd running? start one with: agentd --data ./data, or point --server (NATS_URL) at your cluster"

// app is one invocation: global flags and the lazily opened connection.
type app struct {
	env     Env
	server  string
	creds   string
	output  string
	timeout time.Duration
	poll    time.Duration
	nc      *nats.Conn
	// ctx is the running command's context.
	ctx context.Context
	// root is the cluster's root as a node said it; readChecked is set once
	// a query's credential check passed.
	root        rootAnswer
	readChecked bool
	// noWaitAccept skips waiting for a ledger node to judge a write.
	noWaitAccept bool
	// accepted are the stream seqs of the last publish's messages, once a
	// ledger node accepted them (none with noWaitAccept).
	accepted []uint64
	// denied receives the permission violations NATS reports on the
	// connection (a publish the credentials may not make).
	denied chan error
	// replies judges the cluster's answers (replytrust.go).
	replies replyTrust
	// credsMemo is the creds file, read once (credsonce.go).
	credsMemo credsOnce
	// ahead is the connection being made in the background (ahead.go),
	// until conn or close joins it; aheadErr is why it failed.
	ahead    *ahead
	aheadErr error
}

func newApp(env Env) *app {
	env.fill()
	return &app{env: env, poll: pollInterval, denied: make(chan error, 1)}
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "Control an agentic cluster: submit goals, watch runs, read the audit ledger",
		Long: `agentctl talks to an agentic cluster over NATS. Writes (goals, cancels,
memory facts, cluster settings) are events signed with your operator credentials and
published to the bus; reads are answered by any agentd node.

Before any command talks to the cluster, agentctl checks that your
credential was issued by the root the cluster trusts (node.info says
which); a write succeeds only once a ledger node has accepted it.

Exit codes: 0 ok, 1 error (a write refused by the ledger included, with
its code), 2 usage error, 3 run failed and 4 run cancelled (goal submit
--wait), 5 a write published but not judged by a ledger node within
--timeout, 130 interrupted.`,
		Example: `  agentd --data ./data &                 # a one-machine cluster
  agentctl goal submit -f deploy.yaml --wait
  agentctl run list -o json
  agentctl audit tail --follow`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.ctx = cmd.Context()
			return a.checkGlobals(cmd)
		},
	}
	server := a.env.Getenv("NATS_URL")
	if server == "" {
		server = DefaultServer
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.server, "server", server, "NATS server URL(s), comma-separated (env NATS_URL)")
	pf.StringVar(&a.creds, "creds", "", "operator credentials file (env AGENTIC_CREDS; default ./data/operator.creds, else ~/.agentic/operator.creds)")
	pf.StringVarP(&a.output, "output", "o", "text", "output format: text, json or jsonl")
	pf.DurationVar(&a.timeout, "timeout", DefaultTimeout, "how long to wait for the cluster to answer")
	pf.BoolVar(&a.noWaitAccept, "no-wait-accept", false, "writes: return once the stream stored the event, without waiting for a ledger node to accept it")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(a.goalCmd(), a.runCmd(), a.stepCmd(), a.auditCmd(), a.ledgerCmd(), a.memoryCmd(), a.clusterCmd(), a.keysCmd(), a.nodeCmd(), a.operatorCmd(), a.alarmCmd(), a.versionCmd())
	root.AddCommand(a.policyCmd(), a.planCmd(), a.plannerCmd(), a.gateCmd())
	root.AddCommand(a.pluginCmd())
	root.AddCommand(a.telemetryCmd())
	root.AddCommand(a.proposalCmd(), a.improveCmd())
	root.AddCommand(a.artifactCmd()) // artifact.go
	root.AddCommand(a.kbCmd())       // kb.go
	return root
}

func (a *app) checkGlobals(cmd *cobra.Command) error {
	if !slices.Contains([]string{"text", "json", "jsonl"}, a.output) {
		extra := strings.Split(cmd.Annotations["formats"], ",")
		if !slices.Contains(extra, a.output) {
			want := "text, json or jsonl"
			if cmd.Annotations["formats"] != "" {
				want = "text, json, jsonl, " + strings.ReplaceAll(cmd.Annotations["formats"], ",", ", ")
			}
			return usagef("--output %q: want %s", a.output, want)
		}
	}
	if a.timeout <= 0 {
		return usagef("--timeout must be positive, got %s", a.timeout)
	}
	return nil
}

// conn connects to NATS once per invocation, as the NATS user of the
// credentials file.
func (a *app) conn() (*nats.Conn, error) {
	a.joinAhead()
	if a.nc != nil {
		return a.nc, nil
	}
	if err := a.aheadErr; err != nil {
		return nil, err
	}
	nc, err := a.dial(a.timeout)
	if err != nil {
		return nil, err
	}
	a.nc = nc
	return nc, nil
}

// dial connects to the cluster's NATS with the NATS user of the
// credentials file (and the extra options), waiting up to timeout.
// Without a credentials file it tries without one (an unreachable server
// is then reported as such, and a server that wants credentials as that).
func (a *app) dial(timeout time.Duration, extra ...nats.Option) (*nats.Conn, error) {
	path := a.credsPath()
	auth, err := a.natsAuth(path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, err
	}
	opts := append([]nats.Option{nats.Name("agentctl"), nats.Timeout(timeout), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				select {
				case a.denied <- err:
				default:
				}
			}
		})}, auth...)
	opts = append(opts, extra...)
	nc, err := nats.Connect(a.server, opts...)
	refused := errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked)
	switch {
	case refused && missing:
		return nil, api.WithHint(fmt.Errorf("the NATS server at %s requires credentials, and there is no credentials file at %s: %w", a.server, path, err),
			"agentd writes operator.creds into its data directory on first start; pass --creds DATA/operator.creds or set AGENTIC_CREDS")
	case refused:
		return nil, api.WithHint(a.refusedError(path, err),
			"the credentials may belong to another cluster, have expired or been revoked: use the cluster's operator.creds (agentctl keys operator NAME --root DIR --out FILE, where DIR holds its root.key)")
	case err != nil:
		return nil, api.WithHint(fmt.Errorf("cannot reach NATS at %s: %w", a.server, err), startHint)
	}
	return nc, nil
}

// refusedError says that the server refused the credentials file at path,
// and which root issued it.
func (a *app) refusedError(path string, err error) error {
	if root, rerr := a.credsRoot(path); rerr == nil {
		return fmt.Errorf("the NATS server at %s refused the credentials %s (issued by root %s): %w", a.server, path, root.KeyID(), err)
	}
	return fmt.Errorf("the NATS server at %s refused the credentials %s: %w", a.server, path, err)
}

// natsAuth are the options that present the NATS user of the creds file
// at path. An absent file gives an error wrapping fs.ErrNotExist.
func (a *app) natsAuth(path string) ([]nats.Option, error) {
	var auth []nats.Option
	raw, err := a.credsBytes(path)
	if err == nil {
		auth, _, err = natsauth.CredsOptionsFrom(path, raw)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, natsauth.ErrNoUser):
		return nil, api.WithHint(fmt.Errorf("credentials %s hold no NATS user: the cluster's NATS requires one", path),
			"issue the file again where root.key is: agentctl keys operator NAME --root DIR --out FILE (agentd adds it to DATA/operator.creds at start)")
	case err != nil:
		return nil, api.WithHint(fmt.Errorf("credentials: %w", err),
			"agentd writes operator.creds into its data directory on first start; pass --creds DATA/operator.creds or set AGENTIC_CREDS")
	}
	return auth, nil
}

func (a *app) close() {
	// A connection still being made ahead is given up (its dial
	// cancelled) and joined, so that its goroutine ends here.
	if a.ahead != nil {
		a.ahead.cancel()
		a.joinAhead()
	}
	if a.nc != nil {
		a.nc.Close()
		a.nc = nil
	}
	// A revocations question asked ahead (prefetchRevocations) ends
	// with the connection: wait for its goroutine.
	a.replies.mu.Lock()
	answered := a.replies.answered
	a.replies.mu.Unlock()
	if answered != nil {
		<-answered
	}
}

// client is the query API client over the connection, once the
// credentials file (if any) is known to come from the cluster's root.
func (a *app) client() (*api.Client, error) {
	nc, err := a.conn()
	if err != nil {
		return nil, err
	}
	if err := a.checkReadTrust(a.context()); err != nil {
		return nil, err
	}
	return a.newClient(nc, a.timeout)
}

// credsPath applies the documented order: --creds, $AGENTIC_CREDS,
// ./data/operator.creds if it exists, ~/.agentic/operator.creds.
func (a *app) credsPath() string {
	if a.creds != "" {
		return a.creds
	}
	if p := a.env.Getenv("AGENTIC_CREDS"); p != "" {
		return p
	}
	local := filepath.Join("data", trust.OperatorCredsFile)
	if _, err := os.Stat(local); err == nil {
		return local
	}
	home := a.env.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".agentic", trust.OperatorCredsFile)
}

// identity loads the operator identity that signs this invocation's
// events, and the root that issued it.
func (a *app) identity() (*trust.Identity, *trust.Root, error) {
	path := a.credsPath()
	c, err := a.credsFile(path)
	var id *trust.Identity
	if err == nil {
		id, err = c.Identity()
	}
	if err != nil {
		return nil, nil, api.WithHint(fmt.Errorf("operator credentials: %w", err),
			"agentd writes operator.creds into its data directory on first start; pass --creds DATA/operator.creds or set AGENTIC_CREDS")
	}
	if !slices.Contains(id.Roles, event.RoleOperator) {
		return nil, nil, fmt.Errorf("credentials %s are for %s with roles %v, not an operator", path, id.ID, id.Roles)
	}
	return id, c.Root(), nil
}

// publish signs drafts with the operator identity and publishes them to
// the events stream, waiting for JetStream's acknowledgement and then for
// a ledger node's judgement (awaitAccepted). Before anything is
// published, the credential's root must be the cluster's.
func (a *app) publish(ctx context.Context, drafts ...event.Draft) error {
	id, root, err := a.identity()
	if err != nil {
		return err
	}
	// The connection is made (or a connection made ahead joined, with
	// the root it asked: dialAhead) and the cluster's root asked while
	// the drafts are signed (and the revocations that check the ledger's
	// answer are asked ahead); nothing is published before the root
	// answered and matched.
	rootChecked := make(chan error, 1)
	go func() {
		if _, err := a.conn(); err != nil {
			rootChecked <- err
			return
		}
		if !a.noWaitAccept {
			a.prefetchRevocations()
		}
		rootChecked <- a.checkWriteTrust(ctx, root)
	}()
	msgs, signErr := bus.SignDrafts(id, drafts...)
	if err := <-rootChecked; err != nil {
		return err
	}
	if signErr != nil {
		return signErr
	}
	nc := a.nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	// NATS refuses a subject the credentials may not publish with an
	// asynchronous error, not an answer: stop waiting for one then. A
	// violation left from an earlier request of this invocation is not
	// this publish's.
	select {
	case <-a.denied:
	default:
	}
	deniedc := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case e := <-a.denied:
			deniedc <- e
			cancel()
		case <-stop:
		}
	}()
	acks, err := bus.PublishMsgs(pctx, js, msgs)
	if err != nil && ctx.Err() == nil {
		select {
		case denied := <-deniedc:
			return api.WithHint(fmt.Errorf("the NATS server says credentials %s (%s, roles %v) may not publish %s (nothing was published): %w", a.credsPath(), id.ID, id.Roles, drafts[0].Subject(), denied),
				"docs/security.md lists what each role may publish; a viewer publishes nothing, and only an administrator changes streams")
		default:
		}
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return a.noStream(ctx, js, drafts[0].Subject(), err)
		}
		return a.writeCause(ctx, err)
	}
	return a.awaitAccepted(ctx, acks)
}

// noStream explains a publish that no stream took: it asks JetStream
// about AGENTIC_EVENTS rather than guess.
func (a *app) noStream(ctx context.Context, js jetstream.JetStream, subject string, err error) error {
	sctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	st, serr := js.Stream(sctx, bus.EventsStream)
	switch {
	case errors.Is(serr, jetstream.ErrStreamNotFound):
		return api.WithHint(fmt.Errorf("stream %s does not exist on %s: it was deleted or never created (nothing was published)", bus.EventsStream, a.server),
			"agentd creates absent streams at start, but a ledger node then refuses a stream whose sequence restarted; "+
				"under cluster settings streams-repair=restore the ledger nodes recreate it at once, its sequence continuing. "+
				"See docs/architecture.md, \"Streams drift and deletion\", for the remedy under the alarm rule")
	case serr == nil:
		return api.WithHint(fmt.Errorf("stream %s on %s does not take subject %s (its subjects: %s): %w", bus.EventsStream, a.server, subject,
			strings.Join(st.CachedInfo().Config.Subjects, ", "), err),
			"the stream was changed behind the cluster settings: agentctl cluster settings show lists the drift")
	case errors.Is(serr, jetstream.ErrJetStreamNotEnabled) || errors.Is(serr, jetstream.ErrJetStreamNotEnabledForAccount):
		return api.WithHint(fmt.Errorf("JetStream is not enabled on %s: %w", a.server, err), startHint)
	}
	return api.WithHint(fmt.Errorf("no JetStream stream stores %s on %s: %w", subject, a.server, err), startHint)
}
