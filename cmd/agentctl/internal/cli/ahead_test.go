package cli

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
)

// The connection and the root check of goal submit are made while the
// plan is read: here the plan comes from a FIFO, written only once the
// cluster was asked its root, so a submit that asks only after reading
// the plan never gets it.
func TestGoalSubmitAsksTheRootWhileReadingThePlan(t *testing.T) {
	h := newHarness(t).withNode()
	asked, err := h.conn.NC.SubscribeSync(api.SubjectPrefix + api.MethodNodeInfo)
	if err != nil {
		t.Fatal(err)
	}
	defer asked.Unsubscribe()
	if err := h.conn.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	fifo := mkfifo(t)
	done := make(chan result, 1)
	go func() { done <- h.run("goal", "submit", "-f", fifo) }()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := asked.NextMsg(10 * time.Second); err != nil {
		_ = w.Close() // lets the submit end on an empty plan
		<-done
		t.Fatalf("the cluster's root was not asked while the plan was unread: %v", err)
	}
	writeSubmitted(t, h, w, done, goodPlan)
}

// A plan that fails its check is reported at once, even while the
// connection made ahead hangs on a server that accepted it and never
// speaks; the connection's goroutine ends with the command (TestMain's
// leak check).
func TestGoalSubmitBadPlanDoesNotWaitForTheConnection(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // held open, silent
		}
	}()
	defer func() {
		_ = ln.Close()
		for c := range accepted {
			_ = c.Close()
		}
	}()
	path := writePlan(t, "plan.yaml", badPlan)
	start := time.Now()
	r := h.run("--server", "nats://"+ln.Addr().String(), "--timeout", "30s", "goal", "submit", "-f", path)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a bad plan took %s to report, waiting for a silent server", took)
	}
	if r.code != ExitError || !strings.Contains(r.stderr, "nothing was submitted") {
		t.Fatalf("submit of a bad plan = %+v", r)
	}
}

// A good plan to a server that is not there says so, as before the
// connection was made ahead.
func TestGoalSubmitUnreachableServer(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	path := writePlan(t, "plan.yaml", goodPlan)
	r := h.run("--server", "nats://"+addr, "goal", "submit", "-f", path)
	if r.code != ExitError || !strings.Contains(r.stderr, "cannot reach NATS at nats://"+addr) {
		t.Fatalf("submit to an absent server = %+v", r)
	}
}
