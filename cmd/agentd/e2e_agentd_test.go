package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/internal/freeport"
	"github.com/nats-io/nats.go"
)

// readyTimeout bounds how long a starting agentd may take to answer
// /readyz with 200.
const readyTimeout = 60 * time.Second

// agentd is one agentd process under test: its data dir, executor work
// dir, log file and loopback ports belong to the test and survive restarts,
// so a restart is the same node on the same data.
type agentd struct {
	t        *testing.T
	name     string
	dir      string // the test's temp dir holding the rest
	data     string
	work     string
	logPath  string
	natsPort int
	httpPort int
	// natsURLs, when set, are external NATS servers the node connects to
	// (agentctl uses them too); else the node's embedded server.
	natsURLs []string
	// gossip is the node's gossip address, when it runs gossip.
	gossip string
	extra  []string // more flags
	// env is more of the process's environment (KEY=value).
	env []string
	// enrolled: the data dir was enrolled (agentctl node enroll), so the
	// node writes no operator.creds of its own.
	enrolled bool
	// operatorCreds is the operator credentials file agentctl uses
	// against this agentd ("": DATA/operator.creds): an enrolled node's
	// data dir has none, the root's does.
	operatorCreds string

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process exited and was reaped
	state   *os.ProcessState
	started time.Time
}

// newAgentd prepares an agentd with fresh dirs and free ports; it starts
// nothing. The process, if any is left, is killed when t ends, and its log
// is shown if t failed.
func newAgentd(t *testing.T, extra ...string) *agentd {
	t.Helper()
	dir := t.TempDir()
	a := &agentd{
		t:        t,
		name:     "e2e",
		dir:      dir,
		data:     filepath.Join(dir, "data"),
		work:     filepath.Join(dir, "work"),
		logPath:  filepath.Join(dir, "agentd.log"),
		natsPort: freeport.Port(t),
		httpPort: freeport.Port(t),
		extra:    extra,
	}
	if err := os.MkdirAll(a.work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			t.Logf("agentd log (%s), last lines:\n%s", a.logPath, a.logTail(60))
			a.keepLog()
		}
	})
	return a
}

// startAgentd starts a fresh agentd and waits until it is ready.
func startAgentd(t *testing.T, extra ...string) *agentd {
	t.Helper()
	a := newAgentd(t, extra...)
	a.start()
	a.waitReady()
	return a
}

func (a *agentd) args() []string {
	args := []string{
		"--data", a.data,
		"--name", a.name,
		"--nats-listen", "127.0.0.1:" + strconv.Itoa(a.natsPort),
		"--http-listen", "127.0.0.1:" + strconv.Itoa(a.httpPort),
		"--executor-workdir", a.work,
		"--executor-run-as", strconv.Itoa(os.Geteuid()), // steps run as the test's user, root included
		"--log-format", "json",
	}
	return append(args, a.extra...)
}

// start launches the process (not waiting for readiness). Its output is
// appended to the log file, across restarts.
func (a *agentd) start() {
	a.t.Helper()
	if a.running() {
		a.t.Fatalf("agentd %s: already running", a.name)
	}
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s agentd %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(a.args(), " "))
	cmd := exec.Command(bin.agentd, a.args()...)
	cmd.Dir = a.dir
	cmd.Env = append(hermeticEnv(), a.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test binary dies, so does agentd (and, through its own
	// parent-death signal, every step it runs).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("start agentd: %v", err)
	}
	a.cmd, a.state, a.started = cmd, nil, time.Now()
	done := make(chan struct{})
	a.done = done
	go func() {
		_ = cmd.Wait()
		a.state = cmd.ProcessState
		close(done)
	}()
}

// running reports whether the process was started and has not exited.
func (a *agentd) running() bool {
	if a.done == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// waitReady polls GET /readyz until it answers 200; it fails t at once if
// the process exits meanwhile.
func (a *agentd) waitReady() {
	a.t.Helper()
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", a.httpPort)
	var last string
	exited := false
	ready := func() bool {
		if !a.running() {
			exited = true
			return true // and fail below
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(body.String()))
		return false
	}
	err := poll.Wait(readyTimeout, ready)
	if exited {
		a.t.Fatalf("agentd exited before it was ready (%v); log:\n%s", a.state, a.logTail(40))
	}
	if err != nil {
		a.t.Fatalf("agentd not ready after %v: last /readyz answer: %s", readyTimeout, last)
	}
	if _, err := os.Stat(a.creds()); err != nil && !a.enrolled {
		a.t.Fatalf("agentd is ready but wrote no operator credentials: %v", err)
	}
}

// restart starts the process again on the same data and ports and waits
// until it is ready.
func (a *agentd) restart() {
	a.t.Helper()
	a.start()
	a.waitReady()
}

// signal sends sig to the process.
func (a *agentd) signal(sig syscall.Signal) {
	a.t.Helper()
	if err := a.cmd.Process.Signal(sig); err != nil {
		a.t.Fatalf("signal %v to agentd: %v", sig, err)
	}
}

// wait waits up to d for the process to exit and returns its state, or nil
// if it is still running.
func (a *agentd) wait(d time.Duration) *os.ProcessState {
	select {
	case <-a.done:
		return a.state
	case <-time.After(d):
		return nil
	}
}

// kill9 kills the process with SIGKILL, as a crash would, and reaps it.
func (a *agentd) kill9() {
	a.t.Helper()
	a.signal(syscall.SIGKILL)
	if a.wait(10*time.Second) == nil {
		a.t.Fatal("agentd still running 10s after SIGKILL")
	}
}

// kill ends the process if it runs (cleanup).
func (a *agentd) kill() {
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.done
}

// creds is the operator credentials file agentd writes.
func (a *agentd) creds() string {
	if a.operatorCreds != "" {
		return a.operatorCreds
	}
	return filepath.Join(a.data, "operator.creds")
}

// natsConn connects to the node's NATS as its operator (the NATS user of
// operator.creds), as agentctl does.
func (a *agentd) natsConn() (*nats.Conn, error) {
	opts, _, err := natsauth.CredsOptions(a.creds())
	if err != nil {
		return nil, err
	}
	return nats.Connect(a.natsURL(), opts...)
}

// natsURL is the embedded server's client URL, or the external servers'
// (comma-separated) when the node uses those.
func (a *agentd) natsURL() string {
	if len(a.natsURLs) > 0 {
		return strings.Join(a.natsURLs, ",")
	}
	return "nats://127.0.0.1:" + strconv.Itoa(a.natsPort)
}

// log returns the whole log file (all lives of the process).
func (a *agentd) log() string {
	b, _ := os.ReadFile(a.logPath)
	return string(b)
}

// logTail returns the last n lines of the log, leaving out the embedded
// nats-server's chatter.
func (a *agentd) logTail(n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(a.log(), "\n"), "\n") {
		if !strings.Contains(l, `"component":"nats"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// workFile is the content of a file steps wrote in the executor's work
// dir ("" if it does not exist).
func (a *agentd) workFile(name string) string {
	b, _ := os.ReadFile(filepath.Join(a.work, name))
	return string(b)
}

// workFileExists reports whether a step created name in the work dir.
func (a *agentd) workFileExists(name string) bool {
	_, err := os.Stat(filepath.Join(a.work, name))
	return err == nil
}

// hermeticEnv is the test's environment without the variables that would
// configure agentd or agentctl behind the test's back.
func hermeticEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTIC_") || strings.HasPrefix(kv, "NATS_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runAgentd runs agentd with args to completion (for flag and config
// errors) and returns its exit code and combined output.
func runAgentd(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.agentd, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = hermeticEnv()
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agentd %s: still running after %v; output:\n%s", strings.Join(args, " "), timeout, out.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("agentd %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// keepLogsEnv names a directory where a failed test's agentd logs are
// copied whole (the test's temp dir, which holds them, is removed when the
// test ends).
const keepLogsEnv = "AGENTIC_E2E_KEEP_LOGS"

// keepLog copies the whole log to the directory keepLogsEnv names, if it
// is set, and says where.
func (a *agentd) keepLog() {
	dir := os.Getenv(keepLogsEnv)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.t.Logf("keep agentd log: %v", err)
		return
	}
	name := fmt.Sprintf("%s-%d-%s.log", strings.ReplaceAll(a.t.Name(), "/", "_"), os.Getpid(), a.name)
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, []byte(a.log()), 0o644); err != nil {
		a.t.Logf("keep agentd log: %v", err)
		return
	}
	a.t.Logf("agentd %s's whole log kept in %s", a.name, dst)
}

// get is GET path on the node's HTTP listener, which answers from this
// node's own state: the status and the body.
func (a *agentd) get(path string) (int, []byte, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", a.httpPort, path))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// httpGet is get's answer as text (or the error), for failure messages.
func (a *agentd) httpGet(path string) string {
	code, body, err := a.get(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", code, body)
}
