// Command agentd runs an agentic node. With no flags it is a complete
// single-machine cluster: every role, an embedded nats-server with
// JetStream, and a Pebble ledger in ./data.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/ledger/history"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/backup"
	"github.com/agentic-dev/agentic/node/logging"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/pflag"
)

const usage = `agentd runs an agentic node.

Usage:
  agentd [flags]
  agentd verify-history --genesis ROOT_PUB FILE   # what agentctl keys verify-history runs

With no flags, agentd is a complete single-machine cluster: every role
(orchestrator, planner, executor, memory, ui), an embedded nats-server with
JetStream listening on 127.0.0.1:4222, and a Pebble ledger, all in ./data.
On first start it creates the cluster root key, its own node credential and
an operator credential for agentctl (DATA/operator.creds).

Examples:
  agentd                                   # single machine, everything in ./data
  agentd --data /var/lib/agentic --name node-a
  agentd --roles executor --nats nats://10.0.0.1:4222,nats://10.0.0.2:4222
  AGENTIC_EXECUTOR_SLOTS=16 agentd --config /etc/agentic/agentd.yaml

Then, from another terminal:
  agentctl goal submit -f examples/hello.yaml --wait

A ledger found damaged at start (a record that does not match its chain,
a table Pebble cannot read) leaves the node up but not ready (alarm
CORRUPT); stop it and start it once with --rebuild-ledger. A rebuild
that would reach less than the old ledger (the events stream was deleted
or lost) is refused and the old ledger put back; a node whose events
stream is gone but whose ledger is whole needs no rebuild: it recreates
the stream continuing after its ledger when it starts.

Backup and restore: 'agentctl node backup NODE --out DIR' makes a running
node write a consistent backup on its machine; on the new machine,
'agentd --data NEW --restore-from DIR' makes the data dir of it and starts.

Beyond loopback: the embedded NATS server (--nats-listen,
--nats-cluster-listen) needs TLS (--nats-tls-cert, --nats-tls-key, and
--nats-tls-ca to require client certificates), gossip needs
--gossip-key-file, and the HTTP API asks an operator token ('agentctl keys
api-token'), unless --insecure says otherwise (the banner then says
INSECURE). --probe-listen serves /healthz, /readyz and /metrics without
auth for probes and Prometheus. --debug-listen serves the Go profiles
(/debug/pprof/, for go tool pprof) without auth, on loopback unless
--insecure.

Signals: SIGTERM or SIGINT drains (running steps may finish for
--drain-timeout, then are killed and reported as interrupted) and stops;
SIGHUP reloads the configuration file and applies the log level.

Precedence: defaults < --config file < AGENTIC_* environment < flags.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

func run(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == history.Command {
		return verifyHistory(args[1:], stdout, stderr)
	}
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML); env AGENTIC_CONFIG")
	showVersion := fs.Bool("version", false, "print the version and exit")
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long running steps may finish on SIGTERM")
	restoreFrom := fs.String("restore-from", "", "make the data dir (--data, absent or empty) from a backup directory (agentctl node backup), then start")
	rebuild := fs.Bool("rebuild-ledger", false, "move the ledger aside (DATA/ledger.damaged-<time>, kept) and rebuild it from the events stream or a peer, then start; refused, the ledger put back, when they hold less than it")
	scratch := config.Default()
	scratch.BindFlags(fs)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "agentd: %v\nRun 'agentd --help' for usage.\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd: unexpected argument %q (agentd takes only flags; see agentd --help)\n", fs.Arg(0))
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "agentd %s (%s, nats-server %s)\n", node.Version, runtime.Version(), server.VERSION)
		return 0
	}
	cfg, err := config.Resolve(*cfgPath, environ, fs)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: configuration:\n%v\n", err)
		return 2
	}
	level := new(slog.LevelVar)
	level.Set(cfg.SlogLevel())
	logger := newLogger(cfg, level, stderr)
	n, err := node.New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		return 2
	}
	if *restoreFrom != "" {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		_, err := backup.Restore(rctx, *restoreFrom, cfg.Data, logger)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "agentd: %v\n", err)
			return 1
		}
	}
	if *rebuild {
		aside, err := node.RebuildLedger(cfg.Data, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "agentd: %v\n", err)
			return 1
		}
		if aside != "" {
			logger.Warn("ledger moved aside: it is rebuilt from the events stream (or copied from a peer ledger node)", "moved_to", aside,
				"note", "delete the moved directory once the rebuilt ledger verifies (agentctl ledger verify)")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = n.Start(startCtx)
	cancel()
	if err != nil {
		logger.Error("start failed", "err", err)
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		return 1
	}
	banner(stderr, n)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	code := 0
loop:
	for {
		select {
		case <-ctx.Done():
			logger.Info("stopping: draining", "timeout", *drain)
			break loop
		case err := <-n.Fatal():
			logger.Error("fatal: stopping", "err", err)
			code = 1
			break loop
		case <-n.Drained():
			logger.Info("stopping: drained (a node.drain asked this node to take no new work; what it ran has finished)")
			break loop
		case <-hup:
			reload(*cfgPath, environ, fs, level, logger)
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	if err := n.Stop(dctx); err != nil {
		logger.Error("stop", "err", err)
		return 1
	}
	logger.Info("stopped")
	return code
}

func newLogger(cfg config.Config, level *slog.LevelVar, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	text := cfg.Log.Format == "text"
	if cfg.Log.Format == "auto" {
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				text = true
			}
		}
	}
	format := "json"
	if text {
		format = "text"
	}
	// Each key once per line (logging's doc): libraries add "component"
	// to loggers that have one, and the NATS and Pebble adapters log "msg".
	return slog.New(logging.NewHandler(w, format, opts))
}

// reload re-reads the configuration. Only the log level applies to a
// running node; other changes are reported as needing a restart.
func reload(path string, environ []string, fs *pflag.FlagSet, level *slog.LevelVar, logger *slog.Logger) {
	cfg, err := config.Resolve(path, environ, fs)
	if err != nil {
		logger.Error("reload: configuration rejected; keeping the running one", "err", err)
		return
	}
	level.Set(cfg.SlogLevel())
	logger.Info("reloaded configuration", "log_level", cfg.Log.Level, "note", "other settings apply at the next restart")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func banner(w io.Writer, n *node.Node) {
	cfg := n.Config()
	mode := "external " + strings.Join(cfg.NATS, ",")
	if len(cfg.NATS) == 0 {
		mode = "embedded, JetStream in " + cfg.Data + "/nats (sync_interval: always)"
		if cfg.NATSTLSCert != "" {
			mode += ", TLS"
			if cfg.NATSTLSCA != "" {
				mode += " with client certificates"
			}
		}
	}
	fmt.Fprintf(w, "agentd %s (%s, nats-server %s)\n", node.Version, runtime.Version(), server.VERSION)
	fmt.Fprintf(w, "  node      %s  roles: %s\n", cfg.Name, strings.Join(cfg.Roles, ","))
	fmt.Fprintf(w, "  nats      %s  [%s]\n", n.NATSURL(), mode)
	if g := n.Membership(); g != nil {
		join := strings.Join(cfg.Join, ",")
		if join == "" {
			join = "none: waits to be joined"
		}
		fmt.Fprintf(w, "  gossip    %s  [preset %s, join %s]\n", g.Addr(), cfg.GossipPreset, join)
	}
	if a := n.HTTPAddr(); a != "" {
		paths, auth := "/healthz /readyz /metrics /api/runs", ""
		if n.ProbeAddr() != "" {
			paths = "/api/runs"
		}
		if n.HTTPAuth() {
			auth = ", operator token required: agentctl keys api-token"
		}
		fmt.Fprintf(w, "  http      http://%s  (%s%s)\n", a, paths, auth)
	}
	if a := n.ProbeAddr(); a != "" {
		fmt.Fprintf(w, "  probes    http://%s  (/healthz /readyz /metrics, no auth)\n", a)
	}
	if a := n.DebugAddr(); a != "" {
		fmt.Fprintf(w, "  debug     http://%s/debug/pprof/  (Go profiles, no auth)\n", a)
	}
	fmt.Fprintf(w, "  data      %s\n", cfg.Data)
	if creds := filepath.Join(cfg.Data, "operator.creds"); fileExists(creds) {
		fmt.Fprintf(w, "  operator  agentctl --creds %s\n", creds)
	}
	for _, open := range cfg.InsecureExposure() {
		fmt.Fprintf(w, "  INSECURE: %s (--insecure)\n", open)
	}
}
