package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestTranscripts runs the CLI transcripts of testdata/transcripts: each
// a txtar file that starts a real agentd (the `agentd` command below) and
// drives it with the agentctl binary, matching what it prints line by
// line — the CLI's words, reviewed as text. Run one with
// `go test ./cmd/agentd -run TestTranscripts/NAME`.
func TestTranscripts(t *testing.T) {
	requireE2E(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "transcripts"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(bin.agentctl)+string(os.PathListSeparator)+os.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"agentd":     cmdAgentd,
			"newest-run": cmdNewestRun,
			"await":      cmdAwait,
		},
	})
}

// cmdAgentd starts agentd on $WORK/data with loopback ports, steps run as
// the test's user in $WORK/steps, waits until /readyz answers 200, and
// points agentctl at it (NATS_URL, AGENTIC_CREDS). The process is killed
// when the script ends.
func cmdAgentd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! agentd")
	}
	work := ts.MkAbs("steps")
	if err := os.MkdirAll(work, 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	natsPort, httpPort := scriptPort(ts), scriptPort(ts)
	argv := append([]string{
		"--data", ts.MkAbs("data"), "--name", "tx",
		"--nats-listen", "127.0.0.1:" + strconv.Itoa(natsPort),
		"--http-listen", "127.0.0.1:" + strconv.Itoa(httpPort),
		"--executor-workdir", work,
		"--executor-run-as", strconv.Itoa(os.Geteuid()),
		"--log-format", "json",
	}, args...)
	logf, err := os.Create(ts.MkAbs("agentd.log"))
	if err != nil {
		ts.Fatalf("%v", err)
	}
	cmd := exec.Command(bin.agentd, argv...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = hermeticEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		ts.Fatalf("start agentd: %v", err)
	}
	ts.Defer(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	client := &http.Client{Timeout: time.Second}
	ready := func() bool {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if poll.Wait(readyTimeout, ready) != nil {
		b, _ := os.ReadFile(ts.MkAbs("agentd.log"))
		ts.Fatalf("agentd not ready after %s; its log:\n%s", readyTimeout, b)
	}
	ts.Setenv("NATS_URL", "nats://127.0.0.1:"+strconv.Itoa(natsPort))
	ts.Setenv("AGENTIC_CREDS", ts.MkAbs("data/operator.creds"))
}

// cmdNewestRun sets the variable named by its argument to the id of the
// newest run (agentctl run list -o json), and NAME_END to its last eight
// characters: how a transcript names a run whose id it cannot know.
func cmdNewestRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: newest-run VAR")
	}
	if err := ts.Exec("agentctl", "run", "list", "-o", "json"); err != nil {
		ts.Fatalf("agentctl run list: %v", err)
	}
	var runs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &runs); err != nil || len(runs) == 0 {
		ts.Fatalf("no run listed (%v)", err)
	}
	id := runs[0].ID
	ts.Setenv(args[0], id)
	ts.Setenv(args[0]+"_END", id[len(id)-8:])
}

// cmdAwait runs a command again and again, every 100 ms for at most
// SECONDS, until its standard output matches REGEX: how a transcript
// waits for the cluster (a gate opened, a run finished) without sleeping.
//
//	await SECONDS REGEX PROGRAM [ARGS...]
func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: await SECONDS REGEX PROGRAM [ARGS...]")
	}
	secs, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("await: %v", err)
	}
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("await: %v", err)
	}
	matched := func() bool {
		_ = ts.Exec(args[2], args[3:]...)
		return re.MatchString(ts.ReadFile("stdout"))
	}
	if poll.Wait(time.Duration(secs)*time.Second, matched) != nil {
		ts.Fatalf("await: %s printed nothing matching %q within %ds; last:\n%s%s", args[2], args[1], secs, ts.ReadFile("stdout"), ts.ReadFile("stderr"))
	}
}

// scriptPort is a free loopback port.
func scriptPort(ts *testscript.TestScript) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
