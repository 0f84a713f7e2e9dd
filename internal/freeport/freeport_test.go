package freeport

import (
	"net"
	"testing"
)

// TestPortsAreDistinct: ports handed out are never handed out again, and
// each could be listened on when it was handed out.
func TestPortsAreDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p := Port(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	ln, err := net.Listen("tcp", Addr(t))
	if err != nil {
		t.Fatalf("listen on a handed-out address: %v", err)
	}
	ln.Close()
}
