// Package freeport hands tests loopback TCP ports that were free a moment
// ago and that no earlier call of this process has handed out.
//
// Asking the kernel for port 0 and closing the listener is how a test finds
// a port for a server it starts later, but the kernel may offer the port it
// offered a moment ago once that listener is closed: a node given the same
// port for NATS and HTTP then fails to start. Remembering what was handed
// out rules that out within one test binary.
package freeport

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// attempts bounds how often Port asks the kernel before it gives up.
const attempts = 64

// Port returns a loopback TCP port that was free a moment ago and that this
// process has not handed out before. It fails t if none is found.
func Port(t testing.TB) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for range attempts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("freeport: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handed[port] {
			handed[port] = true
			return port
		}
	}
	t.Fatalf("freeport: no port in %d tries that was not handed out before", attempts)
	return 0
}

// Addr is Port as a "127.0.0.1:port" address.
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}
