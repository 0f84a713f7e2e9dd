package runner

import (
	"strings"
	"testing"
)

const pemKey = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAuQ8aeqn3u2l1
Zm9vYmFyYmF6cXV4cXV1eHF1dXo=
-----END RSA PRIVATE KEY-----`

func TestLineRedactorAcrossChunks(t *testing.T) {
	in := "start\nuser=bob password=hunter2 end\n" + pemKey + "\nafter\ntail token=abc"
	for _, size := range []int{1, 3, 7, 16, 64, len(in)} {
		var lr lineRedactor
		var out strings.Builder
		for i := 0; i < len(in); i += size {
			out.WriteString(lr.write([]byte(in[i:min(i+size, len(in))])))
		}
		out.WriteString(lr.flush())
		got := out.String()
		for _, secret := range []string{"hunter2", "MIIEowIBAAKCAQEA", "Zm9vYmFy", "abc"} {
			if strings.Contains(got, secret) {
				t.Errorf("chunk size %d: %q leaked in %q", size, secret, got)
			}
		}
		for _, keep := range []string{"start\n", "password=[REDACTED] end\n", "after\n", "tail token=[REDACTED]"} {
			if !strings.Contains(got, keep) {
				t.Errorf("chunk size %d: %q missing from %q", size, keep, got)
			}
		}
	}
}

// A line longer than maxHold is released in pieces rather than held
// forever, so memory stays bounded.
func TestLineRedactorLongLine(t *testing.T) {
	var lr lineRedactor
	var n int
	chunk := []byte(strings.Repeat("x", 1000))
	for range 100 {
		n += len(lr.write(chunk))
		if len(lr.pending) > maxHold+len(chunk) {
			t.Fatalf("holding %d bytes", len(lr.pending))
		}
	}
	n += len(lr.flush())
	if n != 100*1000 {
		t.Fatalf("released %d bytes, want %d", n, 100*1000)
	}
}

func TestTrimRuneStart(t *testing.T) {
	s := "héllo"
	if got := trimRuneStart(s[2:]); got != "llo" {
		t.Errorf("trimRuneStart(%q) = %q", s[2:], got)
	}
	if got := trimRuneStart(s); got != s {
		t.Errorf("trimRuneStart(%q) = %q", s, got)
	}
}
