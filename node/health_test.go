package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/executor"
)

// get answers a GET of url with accept as Accept header: status and body.
func get(t *testing.T, url, accept string) (int, string) {
	t.Helper()
	return getWith(t, url, "Accept", accept)
}

// getWith answers a GET of url with header set to value (unless value is
// empty): status and body (0 and the error when the request failed).
func getWith(t *testing.T, url, header, value string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startNATS starts a JetStream server on addr storing in dir.
func startNATS(t *testing.T, dir, addr string, root *trust.Root) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: addr, Auth: bustest.Auth(t, root, dir)})
	if err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	return srv
}

// TestReadinessFollowsJetStream: a node on an external NATS server is
// ready; the server stops and the node says, within seconds, that it is
// not ready and why (/readyz 503 with a line per check, the JSON form,
// the metric); the server comes back on its store and the node is ready
// again without a restart.
func TestReadinessFollowsJetStream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	store := filepath.Join(t.TempDir(), "nats")
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	srv := startNATS(t, store, addr, root)
	defer func() { srv.Shutdown() }()

	cfg := nodetest.Config(dir)
	cfg.NATS = []string{"nats://" + addr}
	n := nodetest.Start(t, cfg)
	readyz := "http://" + n.HTTPAddr() + "/readyz"
	poll.Eventually(t, 30*time.Second, "the node ready", func() bool { return n.Ready() == nil })
	code, body := get(t, readyz, "")
	if code != http.StatusOK || !strings.HasPrefix(body, "ready\n") {
		t.Fatalf("/readyz of a ready node: %d %q", code, body)
	}
	for _, c := range []string{health.CheckDisk, health.CheckJetStream, health.CheckOutbox, health.CheckLedger, health.CheckClock, health.CheckLeader, health.CheckConsumer, health.CheckStreams, health.CheckCredential, follow.CheckRejects} {
		if !strings.Contains(body, "[+]"+c+" ok\n") {
			t.Errorf("/readyz does not show check %s passing:\n%s", c, body)
		}
	}
	info := n.Info()
	if !info.Ready || info.NotReady != "" || len(info.Checks) != 12 || info.Leader != cfg.Name || info.Epoch == 0 {
		t.Errorf("node.info of a ready node: %+v", info)
	}

	srv.Shutdown()
	poll.Eventually(t, 10*time.Second, "not ready, naming jetstream", func() bool {
		err := n.Ready()
		return err != nil && strings.HasPrefix(err.Error(), "jetstream: nats connection")
	})
	code, body = get(t, readyz, "")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: jetstream: ") || !strings.Contains(body, "[-]jetstream failed: nats connection") {
		t.Errorf("/readyz without JetStream: %d %q", code, body)
	}
	code, body = get(t, readyz+"?verbose", "")
	var checks []health.Status
	if err := json.Unmarshal([]byte(body), &checks); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz?verbose: %d %q (%v)", code, body, err)
	}
	// The disk check comes first; jetstream second.
	if len(checks) < 2 || checks[1].Name != health.CheckJetStream || checks[1].OK || !checks[1].Blocking || checks[1].Since.IsZero() {
		t.Errorf("/readyz?verbose: %+v", checks)
	}
	if code, body = get(t, readyz, "application/json"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "[{") {
		t.Errorf("/readyz with Accept: application/json: %d %q", code, body)
	}
	if _, m := get(t, "http://"+n.HTTPAddr()+"/metrics", ""); !strings.Contains(m, fmt.Sprintf(`agentic_check_ok{check="jetstream",node=%q} 0`, cfg.Name)) {
		t.Errorf("metrics do not show the jetstream check failing")
	}
	if i := n.Info(); i.Ready || !strings.HasPrefix(i.NotReady, "jetstream: ") || i.Leader != "" || i.LeaderReason == "" {
		t.Errorf("node.info without JetStream: ready %v %q, leader %q (%q)", i.Ready, i.NotReady, i.Leader, i.LeaderReason)
	}

	srv = startNATS(t, store, addr, root)
	poll.Eventually(t, 30*time.Second, "ready again without a restart", func() bool { return n.Ready() == nil })
	if code, _ := get(t, readyz, ""); code != http.StatusOK {
		t.Errorf("/readyz after JetStream came back: %d", code)
	}
	if _, m := get(t, "http://"+n.HTTPAddr()+"/metrics", ""); !strings.Contains(m, fmt.Sprintf(`agentic_check_ok{check="jetstream",node=%q} 1`, cfg.Name)) {
		t.Errorf("metrics do not show the jetstream check passing again")
	}
}

// TestAlarmInTheLedger: a check carrying an alarm fails; the node raises
// the alarm once (in the ledger, alarm ls shows it), and clears it once
// when the check passes again.
func TestAlarmInTheLedger(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	poll.Eventually(t, 30*time.Second, "the node ready", func() bool { return n.Ready() == nil })
	var st health.State
	err := node.HealthOf(n.Node).Register(health.Check{Name: "test-skew", Alarm: event.AlarmClockSkew, Probe: st.Probe, Changed: st.Changed})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st.Set(errors.New("clock 40s ahead"))
	var alarms []api.Alarm
	poll.Eventually(t, 20*time.Second, "alarm ls showing the alarm", func() bool {
		alarms, err = n.API.Alarms(ctx)
		return err == nil && len(alarms) == 1
	})
	if a := alarms[0]; a.Node != "test-node" || a.Alarm != event.AlarmClockSkew || a.Check != "test-skew" || a.Reason != "clock 40s ahead" || a.Seq == 0 {
		t.Errorf("alarm %+v", a)
	}
	if err := n.Ready(); err != nil {
		t.Errorf("a non-blocking check made the node not ready: %v", err)
	}
	p, err := n.API.Nodes(ctx)
	if err != nil || len(p.Items) != 1 || len(p.Items[0].Alarms) != 1 || p.Items[0].Ready == nil || !*p.Items[0].Ready || len(p.Items[0].Checks) != 13 {
		t.Errorf("nodes.list: %+v, %v", p, err)
	}
	_, m := get(t, "http://"+n.HTTPAddr()+"/metrics", "")
	if !strings.Contains(m, `agentic_alarm{alarm="CLOCK_SKEW",node="test-node"} 1`) {
		t.Errorf("metrics do not show the alarm")
	}
	if !strings.Contains(m, `agentic_rejected_dropped_total{node="test-node"} 0`) || !strings.Contains(m, `agentic_alarm{alarm="REJECT_FLOOD",node="test-node"} 0`) {
		t.Errorf("metrics do not show the rejection counts and REJECT_FLOOD:\n%s", m)
	}
	st.Set(nil)
	poll.Eventually(t, 20*time.Second, "alarm ls empty", func() bool {
		alarms, err = n.API.Alarms(ctx)
		return err == nil && len(alarms) == 0
	})
	var types []string
	for l, err := range n.API.AuditLines(ctx, api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l.Type, "alarm.") {
			types = append(types, l.Type)
		}
	}
	if strings.Join(types, ",") != "alarm.raised,alarm.cleared" {
		t.Errorf("alarm events in the ledger: %v, want one raise and one clear", types)
	}
}

// TestNodeInfoReportsNoStaleLeader: a ledger node without the
// orchestrator role reports the live lease holder as leader; once the
// leader has stopped (its lease released), it reports no leader and why,
// although its ledger still records the last election.
func TestNodeInfoReportsNoStaleLeader(t *testing.T) {
	dirA := t.TempDir()
	root := nodetest.NewRoot(t, dirA)
	srv := bustest.SecureServer(t, root)
	cfgA := nodetest.Config(dirA)
	cfgA.Name, cfgA.Roles, cfgA.NATS = "lead-a", []string{event.RoleOrchestrator}, []string{srv.ClientURL()}
	a := nodetest.Start(t, cfgA)
	poll.Eventually(t, 20*time.Second, "lead-a leading", func() bool { return a.Info().Leader == "lead-a" })

	cfgB := nodetest.PeerConfig(t, srv.ClientURL(), root, "plan-b", event.RolePlanner)
	b := nodetest.Start(t, cfgB)
	poll.Eventually(t, 20*time.Second, "plan-b seeing lead-a lead", func() bool {
		i := b.Info()
		return i.Leader == "lead-a" && i.Epoch == 1 && i.Ready
	})

	a.Stop(t)
	var info api.NodeInfo
	poll.Eventually(t, 10*time.Second, "plan-b reporting no leader", func() bool {
		info = b.Info()
		return info.Leader == "" && info.LeaderReason != ""
	})
	if !strings.Contains(info.LeaderReason, "no orchestrator holds the lease") || info.Epoch != 0 {
		t.Errorf("node.info without a leader: %+v", info)
	}
	// The leader check is not blocking on a node without the orchestrator
	// role: it is reported, and the node stays ready.
	if !info.Ready || b.Ready() != nil {
		t.Errorf("plan-b not ready: %v", b.Ready())
	}
	var leader *health.Status
	for _, c := range info.Checks {
		if c.Name == health.CheckLeader {
			leader = &c
		}
	}
	if leader == nil || leader.OK || leader.Blocking || leader.Reason != info.LeaderReason {
		t.Errorf("leader check: %+v", leader)
	}
	p, err := b.API.Nodes(context.Background())
	if err != nil || p.Leader != "" {
		t.Errorf("nodes.list names a leader whose lease is gone: %+v, %v", p, err)
	}
}

// TestConsumerDeletedRaisesAndClearsItsAlarm: the executor's durable
// consumer deleted under a running node is made again; the node records
// CONSUMER_MISSING in the ledger once, and its clear once.
func TestConsumerDeletedRaisesAndClearsItsAlarm(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	poll.Eventually(t, 30*time.Second, "the node ready", func() bool { return n.Ready() == nil })
	ctx := context.Background()
	if err := n.JS.DeleteConsumer(ctx, bus.EventsStream, executor.ConsumerName("test-node")); err != nil {
		t.Fatal(err)
	}
	var types []string
	poll.Eventually(t, 30*time.Second, "alarm raised and cleared in the ledger", func() bool {
		types = types[:0]
		for l, err := range n.API.AuditLines(ctx, api.AuditRequest{}) {
			if err != nil {
				return false
			}
			if strings.HasPrefix(l.Type, "alarm.") {
				var d event.AlarmData
				if json.Unmarshal(l.Data, &d) != nil || d.Alarm != event.AlarmConsumerMissing || d.Check != health.CheckConsumer {
					t.Fatalf("alarm %s %s", l.Type, l.Data)
				}
				types = append(types, l.Type)
			}
		}
		return len(types) >= 2
	})
	if strings.Join(types, ",") != "alarm.raised,alarm.cleared" {
		t.Fatalf("alarm events: %v, want one raise then one clear", types)
	}
	poll.Eventually(t, 10*time.Second, "ready, no alarm in force", func() bool {
		a, err := n.API.Alarms(ctx)
		return err == nil && len(a) == 0 && n.Ready() == nil
	})
}
