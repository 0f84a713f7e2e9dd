package runner

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServerWithoutNetwork: a server started with NoNetwork runs in a
// network namespace of its own, holding no interface but loopback, where
// the kernel lets the executor make one (root here); otherwise it runs
// in the executor's and says so (NetworkShared).
func TestServerWithoutNetwork(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skipf("no /proc/self/ns/net: %v", err)
	}
	start := func(noNet bool) (string, string, *Server) {
		s, err := StartServer(ServerSpec{Argv: []string{"/bin/sh", "-c", `readlink /proc/self/ns/net; echo $(tail -n +3 /proc/net/dev | cut -d: -f1); cat`}, NoNetwork: noNet},
			Options{KillGrace: 200 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		r := bufio.NewReader(s.Stdout)
		ns, _ := r.ReadString('\n')
		ifs, _ := r.ReadString('\n')
		return strings.TrimSpace(ns), strings.TrimSpace(ifs), s
	}
	if ns, _, _ := start(false); ns != own {
		t.Fatalf("a server with network runs in namespace %s, the executor in %s", ns, own)
	}
	ns, ifs, s := start(true)
	if s.NetworkShared {
		if os.Geteuid() == 0 {
			t.Fatal("as root, the server without network was not put in a namespace of its own")
		}
		t.Skip("the kernel refused a network namespace to this user: the server runs with the executor's network, and says so")
	}
	if ns == own || ifs != "lo" {
		t.Fatalf("a server without network: namespace %s (executor's %s), interfaces %q: want its own, only lo", ns, own, ifs)
	}
}
