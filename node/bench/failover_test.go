package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// failoverRounds is how many kills each failover benchmark measures.
const failoverRounds = 5

// BenchmarkExecutorFailover measures, as a user meets it (agentd and
// nats-server processes, default flags but the gossip preset "fast", the
// default), the time from kill -9 of the executor running a step to that
// step's task.started from the other executor: failure detection
// (memberlist), node.failed, the superseding cancel and the new assignment,
// all through the ledger. Three processes on one nats-server: a
// (orchestrator, planner, memory, ui), b and c (executors, one slot each,
// no queue, so the killed node holds exactly the step). The killed node is
// restarted before the next round. Reported: median and max over
// failoverRounds kills, in ms.
func BenchmarkExecutorFailover(b *testing.B) {
	cl := startBenchCluster(b)
	a := cl.agentd(b, "a", "orchestrator,planner,memory,ui", nil)
	ex := []*benchProc{
		cl.agentd(b, "b", "executor", a, "--executor-slots", "1", "--executor-queue", "0"),
		cl.agentd(b, "c", "executor", a, "--executor-slots", "1", "--executor-queue", "0"),
	}
	w := cl.watch(b, a)
	w.waitFor(b, "both executors online", func(e event.Event) bool { return e.Type == event.ExecutorOnline && e.Node == "c" })
	plan := writeBenchPlan(b, "goal: Fail over\nsteps:\n  - id: long\n    run: sleep 300\n    idempotent: true\n")
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		for round := 0; round < failoverRounds; round++ {
			run := cl.ctl(b, a, "goal", "submit", "-f", plan)
			first := w.waitFor(b, "attempt 1 started", func(e event.Event) bool { return isStart(e, run, 1) })
			victim := ex[0]
			if first.Node == ex[1].name {
				victim = ex[1]
			}
			t0 := time.Now()
			victim.kill9(b)
			second := w.waitFor(b, "attempt 2 started", func(e event.Event) bool { return isStart(e, run, 2) })
			took = append(took, second.seen.Sub(t0))
			cl.ctl(b, a, "run", "cancel", run)
			mark := w.mark()
			victim.start(b)
			victim.waitReady(b)
			w.waitAfter(b, mark, "the restarted executor back", func(e event.Event) bool {
				var d event.NodeData
				return e.Type == event.NodeJoined && json.Unmarshal(e.Data, &d) == nil && d.Node == victim.name
			})
		}
	}
	b.StopTimer()
	reportSpread(b, took, "executor-failover")
}

// BenchmarkLeaderFailover measures the time from kill -9 of the leader
// orchestrator to the next decision, with processes as users run them: a
// and b run the orchestrator (b an executor too), c the planner and the
// memory. A goal is submitted right after the kill; its plan.accepted can
// only come from the new leader. Reported: to the new leader.elected and to
// that plan.accepted, median and max over failoverRounds kills, in ms; the
// killed node is restarted (a standby) before the next round.
func BenchmarkLeaderFailover(b *testing.B) {
	cl := startBenchCluster(b)
	a := cl.agentd(b, "a", "orchestrator,ui", nil)
	nodes := map[string]*benchProc{
		"a": a,
		"b": cl.agentd(b, "b", "orchestrator,executor", a),
		"c": cl.agentd(b, "c", "planner,memory", a),
	}
	w := cl.watch(b, a)
	plan := writeBenchPlan(b, "goal: Lead on\nsteps:\n  - id: one\n    run: \"true\"\n")
	var elected, decided []time.Duration
	leader := w.waitFor(b, "a leader", func(e event.Event) bool { return e.Type == event.LeaderElected }).Node
	b.ResetTimer()
	for range b.N {
		for round := 0; round < failoverRounds; round++ {
			victim := nodes[leader]
			mark := w.mark()
			t0 := time.Now()
			victim.kill9(b)
			run := cl.ctl(b, nodes["c"], "goal", "submit", "-f", plan)
			e := w.waitAfter(b, mark, "a new leader", func(e event.Event) bool { return e.Type == event.LeaderElected && e.Node != victim.name })
			elected = append(elected, e.seen.Sub(t0))
			d := w.waitAfter(b, mark, "the goal's plan accepted", func(e event.Event) bool { return e.Type == event.PlanAccepted && e.Run == run })
			decided = append(decided, d.seen.Sub(t0))
			leader = e.Node
			victim.start(b)
			victim.waitReady(b)
		}
	}
	b.StopTimer()
	reportSpread(b, elected, "leader-elected")
	reportSpread(b, decided, "leader-next-decision")
}

func isStart(e event.Event, run string, attempt int) bool {
	if e.Type != event.TaskStarted || e.Run != run {
		return false
	}
	var d event.TaskStartedData
	return json.Unmarshal(e.Data, &d) == nil && d.Attempt == attempt
}

// reportSpread reports the median and the max of d in ms.
func reportSpread(b *testing.B, d []time.Duration, name string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
	b.ReportMetric(ms(d[len(d)-1]), name+"-max-ms")
}

// benchCluster is one nats-server process and the agentd processes on it.
type benchCluster struct {
	dir     string
	agentd_ string
	ctlBin  string
	natsURL string
	nats    *benchProc
}

func startBenchCluster(b *testing.B) *benchCluster {
	b.Helper()
	cl := &benchCluster{
		dir:     b.TempDir(),
		agentd_: buildAgentd(b),
		ctlBin:  buildBinary(b, "agentctl", "github.com/agentic-dev/agentic/cmd/agentctl"),
	}
	natsBin := buildBinary(b, "nats-server", "github.com/nats-io/nats-server/v2")
	port := benchPort(b)
	// The first node's data dir holds the cluster's root before anything
	// starts: the server trusts it (operator mode, as agentctl keys
	// nats-config writes it).
	if _, err := natsauth.InitRoot(filepath.Join(cl.dir, "a")); err != nil {
		b.Fatal(err)
	}
	bundle, err := natsauth.LoadBundle(filepath.Join(cl.dir, "a"))
	if err != nil {
		b.Fatal(err)
	}
	auth, err := natsauth.ServerConfig(bundle, filepath.Join(cl.dir, "jwt"))
	if err != nil {
		b.Fatal(err)
	}
	conf := filepath.Join(cl.dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q, sync_interval: always }\n", port, filepath.Join(cl.dir, "js"))+auth), 0o644); err != nil {
		b.Fatal(err)
	}
	cl.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	cl.nats = &benchProc{name: "nats-server", bin: natsBin, args: []string{"-c", conf}}
	cl.nats.start(b)
	if err := poll.Wait(30*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		b.Fatalf("nats-server not listening: %v\n%s", err, cl.nats.stderr())
	}
	b.Cleanup(func() { cl.nats.kill() })
	return cl
}

// agentd starts and waits for one agentd; join (nil for the first node)
// is the node whose root enrolls this one and whose gossip it joins.
func (cl *benchCluster) agentd(b *testing.B, name, roles string, join *benchProc, extra ...string) *benchProc {
	b.Helper()
	data := filepath.Join(cl.dir, name)
	p := &benchProc{name: name, bin: cl.agentd_, data: data, gossip: fmt.Sprintf("127.0.0.1:%d", benchPort(b)), http: fmt.Sprintf("127.0.0.1:%d", benchPort(b))}
	p.args = []string{"--data", data, "--name", name, "--roles", roles, "--nats", cl.natsURL,
		"--http-listen", p.http, "--gossip-listen", p.gossip, "--executor-workdir", filepath.Join(cl.dir, "work-"+name),
		"--log-level", "warn", "--log-format", "text"}
	if join != nil {
		p.args = append(p.args, "--join", join.gossip)
		cl.ctl(b, join, "node", "enroll", name, "--roles", roles, "--root", join.data, "--out", data)
	}
	p.args = append(p.args, extra...)
	if err := os.MkdirAll(filepath.Join(cl.dir, "work-"+name), 0o755); err != nil {
		b.Fatal(err)
	}
	p.start(b)
	p.waitReady(b)
	b.Cleanup(func() { p.kill() })
	return p
}

// ctl runs agentctl with the first node's operator credentials and
// returns its trimmed stdout.
func (cl *benchCluster) ctl(b *testing.B, via *benchProc, args ...string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cl.ctlBin, args...)
	cmd.Env = append(os.Environ(), "NATS_URL="+cl.natsURL, "AGENTIC_CREDS="+filepath.Join(cl.dir, "a", "operator.creds"))
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		b.Fatalf("agentctl %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out))
}

// seenEvent is a verified event and when this process received it.
type seenEvent struct {
	event.Event
	seen time.Time
}

// eventWatch collects every verified event published on the cluster.
type eventWatch struct {
	mu     sync.Mutex
	events []seenEvent
	wake   chan struct{}
}

// watch subscribes to every event subject with the cluster's root.
func (cl *benchCluster) watch(b *testing.B, first *benchProc) *eventWatch {
	b.Helper()
	root, err := trust.LoadRootPublic(filepath.Join(first.data, "root.pub"))
	if err != nil {
		b.Fatal(err)
	}
	v := envelope.NewVerifier(root)
	auth, _, err := natsauth.CredsOptions(filepath.Join(cl.dir, "a", "operator.creds"))
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(cl.natsURL, auth...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	w := &eventWatch{wake: make(chan struct{}, 1)}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	// An ordered consumer from the stream's start: the events before the
	// watch began are seen too (with the time they were read).
	cons, err := js.OrderedConsumer(context.Background(), "AGENTIC_EVENTS", jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now()
		env, err := v.Verify(m.Data(), m.Subject(), now)
		if err != nil {
			return
		}
		w.mu.Lock()
		for _, e := range env.Events {
			w.events = append(w.events, seenEvent{Event: e, seen: now})
		}
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	return w
}

// mark is the position of the next event received.
func (w *eventWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.events)
}

// waitFor returns the first event ever received that matches ok.
func (w *eventWatch) waitFor(b *testing.B, what string, ok func(event.Event) bool) seenEvent {
	b.Helper()
	return w.waitAfter(b, 0, what, ok)
}

// waitAfter returns the first event from position from on that matches
// ok, waiting up to a minute.
func (w *eventWatch) waitAfter(b *testing.B, from int, what string, ok func(event.Event) bool) seenEvent {
	b.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		for _, e := range w.events[min(from, len(w.events)):] {
			if ok(e.Event) {
				w.mu.Unlock()
				return e
			}
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-deadline:
			w.mu.Lock()
			var seen []string
			for _, e := range w.events[min(from, len(w.events)):] {
				seen = append(seen, string(e.Type)+"/"+e.Node)
			}
			w.mu.Unlock()
			b.Fatalf("no event: %s (after %d: %v)", what, from, seen)
		}
	}
}

// benchProc is a process the failover benchmarks start, kill and restart.
type benchProc struct {
	name, bin, data, gossip, http string
	args                          []string
	cmd                           *exec.Cmd
	exited                        chan struct{}
	mu                            sync.Mutex
	tail                          []string
}

func (p *benchProc) start(b *testing.B) {
	b.Helper()
	cmd := exec.Command(p.bin, p.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.tail = append(p.tail, sc.Text())
			if len(p.tail) > 30 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
}

func (p *benchProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

func (p *benchProc) waitReady(b *testing.B) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitReadyz(b, ctx, "http://"+p.http+"/readyz")
}

// kill9 kills the process as a crash would and reaps it.
func (p *benchProc) kill9(b *testing.B) {
	b.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		b.Fatalf("%s still running after SIGKILL", p.name)
	}
}

func (p *benchProc) kill() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// benchPort is a loopback port that was free a moment ago.
func benchPort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func writeBenchPlan(b *testing.B, content string) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "plan-"+strconv.Itoa(len(content))+".yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}
