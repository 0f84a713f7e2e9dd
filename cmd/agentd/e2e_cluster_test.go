package main_test

import (
	"fmt"
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
)

// natsServer is one nats-server process of a test cluster, built from the
// nats-server module this project depends on (TestMain builds it). Its
// store and ports belong to the test and survive restarts.
type natsServer struct {
	t        *testing.T
	name     string
	dir      string
	conf     string
	logPath  string
	port     int
	monPort  int
	cmd      *exec.Cmd
	done     chan struct{}
	stopping bool
}

// natsCluster starts n clustered nats-server processes with JetStream
// (sync_interval: always, as deploy/nats ships) and waits until every one
// reports healthy JetStream. Ports are picked free a moment before the
// servers bind them, so another process may take one in between: a
// cluster whose server exits at start is started again on fresh ports.
func natsCluster(t *testing.T, n int, bundle natsauth.Bundle) []*natsServer {
	t.Helper()
	if bin.natsServer == "" {
		t.Fatal("no nats-server binary was built (TestMain builds it unless -short; call requireE2E first)")
	}
	for attempt := 1; ; attempt++ {
		servers := startNATSCluster(t, n, bundle)
		exited := clusterHealthy(t, servers)
		if exited == nil {
			return servers
		}
		for _, s := range servers {
			s.kill()
		}
		if attempt == 3 {
			t.Fatalf("nats-server %s exited at start %d times; its log:\n%s", exited.name, attempt, tailFile(exited.logPath, 20))
		}
		t.Logf("nats-server %s exited at start (a port taken meanwhile?); starting the cluster again on other ports:\n%s", exited.name, tailFile(exited.logPath, 3))
	}
}

// startNATSCluster writes the servers' configurations on fresh ports and
// starts them.
func startNATSCluster(t *testing.T, n int, bundle natsauth.Bundle) []*natsServer {
	t.Helper()
	servers := make([]*natsServer, n)
	routes := make([]string, n)
	clusterPorts := make([]int, n)
	for i := range servers {
		clusterPorts[i] = freeport.Port(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", clusterPorts[i])
	}
	for i := range servers {
		dir := t.TempDir()
		s := &natsServer{
			t: t, name: fmt.Sprintf("n%d", i+1), dir: dir,
			conf: filepath.Join(dir, "nats.conf"), logPath: filepath.Join(dir, "nats.log"),
			port: freeport.Port(t), monPort: freeport.Port(t),
		}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: agentic-e2e
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, s.name, s.port, s.monPort, filepath.Join(dir, "js"), clusterPorts[i], strings.Join(routes, ", "))
		// Operator mode for the cluster's root, as agentctl keys
		// nats-config writes it (docs/deploy.md).
		auth, err := natsauth.ServerConfig(bundle, filepath.Join(dir, "jwt"))
		if err != nil {
			t.Fatal(err)
		}
		conf += auth
		if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.kill()
			if t.Failed() {
				t.Logf("nats-server %s log, last lines:\n%s", s.name, tailFile(s.logPath, 20))
			}
		})
		servers[i] = s
	}
	for _, s := range servers {
		s.start()
	}
	return servers
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// urls are the client URLs of servers.
func natsURLs(servers []*natsServer) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.url())
	}
	return out
}

func (s *natsServer) url() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// start launches the server (not waiting for health).
func (s *natsServer) start() {
	s.t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin.natsServer, "-c", s.conf)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server %s: %v", s.name, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() { _ = cmd.Wait(); close(done) }()
}

// waitHealthy polls the monitoring endpoint until JetStream is healthy;
// it returns false at once if the process exits meanwhile, and fails t if
// the server is not healthy within a minute.
func (s *natsServer) waitHealthy() bool {
	s.t.Helper()
	return clusterHealthy(s.t, []*natsServer{s}) == nil
}

// clusterHealthy waits until every server of servers reports healthy and
// returns nil, or returns the first that exited meanwhile: one that exits
// at start (a port another test took a moment before) keeps the others
// from forming the cluster, so every server is looked at on each poll.
func clusterHealthy(t *testing.T, servers []*natsServer) *natsServer {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	var exited *natsServer
	poll.Eventually(t, 60*time.Second, "nats-server cluster healthy", func() bool {
		for _, s := range servers {
			select {
			case <-s.done:
				exited = s
				return true
			default:
			}
		}
		for _, s := range servers {
			resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", s.monPort))
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return true
	})
	return exited
}

// kill9 kills the server as a crash would and reaps it.
func (s *natsServer) kill9() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("nats-server %s still running 10s after SIGKILL", s.name)
	}
}

// kill ends the process if it runs (cleanup).
func (s *natsServer) kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
