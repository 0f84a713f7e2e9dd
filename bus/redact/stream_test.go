package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// streamInputs are outputs with planted secrets, each as a step would print
// it (surrounded by ordinary lines).
func streamInputs() []struct{ name, text, secret string } {
	out := []struct{ name, text, secret string }{
		{"pem block", "start\n" + pemKey + "\nafter\n", "MIIEowIBAAKCAQEAuQ8aeqn3u2l1"},
		{"pem block body", "start\n" + pemKey + "\nafter\n", "Zm9vYmFyYmF6cXV4cXV1eHF1dXo="},
		{"pem body no BEGIN", "start\n" + pemBody + "\nafter\n", "p0aS2dF4gH6jK8lZ1xC3vB5nM7qW9eR1tY3uI5oP7aS9dF1gH3jK5lZ7xC9vB1nM"},
		{"pem middle and END", "start\n" + strings.Join(strings.Split(pemBody, "\n")[1:], "\n") + "\nafter\n", "R7tGq1Pz6nF0cW3mY8eXo5Jb2KlA9sD4fH6gJ1kL3zX8cV5bN7mQ2wE4rT6yU8iO"},
		{"unterminated", "tail token=abc123", "abc123"},
	}
	for _, p := range planted {
		if strings.Contains(p.text, "\n") {
			continue
		}
		out = append(out, struct{ name, text, secret string }{p.name, "step 1 ok\n" + p.text + "\nstep 2 ok\n", p.secret})
		out = append(out, struct{ name, text, secret string }{p.name + " at end", "step 1 ok\n" + p.text, p.secret})
	}
	return out
}

// leaked reports a piece (5 bytes or more) of secret in out that the whole
// text's redaction does not show either (a piece of a key name, say).
func leaked(out, whole, secret string) string {
	if strings.Contains(out, secret) {
		return secret
	}
	const n = 5
	for i := 0; i+n <= len(secret); i++ {
		if p := secret[i : i+n]; strings.Contains(out, p) && !strings.Contains(whole, p) {
			return p
		}
	}
	return ""
}

func streamAll(chunks ...string) string {
	s := NewStream()
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(s.Write([]byte(c)))
	}
	b.WriteString(s.Flush())
	return b.String()
}

// A secret split across two writes at any byte is redacted as if written
// whole.
func TestStreamSplitAtEveryOffset(t *testing.T) {
	for _, in := range streamInputs() {
		whole := Redact(in.text)
		for i := 0; i <= len(in.text); i++ {
			got := streamAll(in.text[:i], in.text[i:])
			if p := leaked(got, whole, in.secret); p != "" {
				t.Fatalf("%s split at %d: %q leaked in %q", in.name, i, p, got)
			}
			if !strings.Contains(got, "[REDACTED") {
				t.Fatalf("%s split at %d: no label in %q", in.name, i, got)
			}
		}
	}
}

// Written one byte at a time, and in chunks of odd sizes.
func TestStreamSmallChunks(t *testing.T) {
	for _, in := range streamInputs() {
		whole := Redact(in.text)
		for _, size := range []int{1, 2, 3, 7, 16, 64} {
			var chunks []string
			for i := 0; i < len(in.text); i += size {
				chunks = append(chunks, in.text[i:min(i+size, len(in.text))])
			}
			got := streamAll(chunks...)
			if p := leaked(got, whole, in.secret); p != "" {
				t.Fatalf("%s chunks of %d: %q leaked in %q", in.name, size, p, got)
			}
		}
	}
}

// A pause in the middle of a secret (the step prints half of it, sleeps,
// prints the rest) releases no part of it while the pause is shorter than
// TokenHold; after a longer one, a piece that did not look like the start
// of a secret (five bytes of a PEM line, "AIz") may have gone out, never
// the secret.
func TestStreamPauseInsideSecret(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, pause := range []time.Duration{250 * time.Millisecond, 2500 * time.Millisecond, 10 * time.Second} {
		for _, in := range streamInputs() {
			whole := Redact(in.text)
			for i := 0; i <= len(in.text); i++ {
				s := NewStream()
				var b strings.Builder
				b.WriteString(s.Write([]byte(in.text[:i])))
				step := max(pause/4, 250*time.Millisecond) // the runner asks every 250 ms; fewer calls judge the same
				for at := t0; at.Sub(t0) <= pause && s.Pending() > 0; at = at.Add(step) {
					b.WriteString(s.Idle(at))
				}
				b.WriteString(s.Write([]byte(in.text[i:])))
				b.WriteString(s.Flush())
				got := b.String()
				p := leaked(got, whole, in.secret)
				if pause >= TokenHold && p != in.secret {
					p = ""
				}
				if p != "" {
					t.Fatalf("%s, pause of %v at %d: %q leaked in %q", in.name, pause, i, p, got)
				}
			}
		}
	}
}

// Ordinary output goes through unchanged, whatever the chunks and pauses.
func TestStreamCleanOutputUnchanged(t *testing.T) {
	clean := "go: downloading github.com/nats-io/nats.go v1.37.0\ncommit 3f2a9c1e8b7d6f5a4e3c2b1a0f9e8d7c6b5a4f3e\n" +
		"run 0190a3c2-7b1e-7c3d-9f00-1a2b3c4d5e6f started\ndata: SGVsbG8gV29ybGQgZnJvbSB0aGUgZG9jcyBleGFtcGxlIQ==\n" +
		"Downloading archive.tar.gz 45%\rDownloading archive.tar.gz 100%\n" +
		"aGVsbG8gd29ybGQsIHRoaXMgaXMganVzdCBhbiBleGFtcGxlIG9mIGJhc2U2NAo=\nok\ndone"
	t0 := time.Unix(1_800_000_000, 0)
	for i := 0; i <= len(clean); i++ {
		if got := streamAll(clean[:i], clean[i:]); got != clean {
			t.Fatalf("split at %d: %q", i, got)
		}
		s := NewStream()
		got := s.Write([]byte(clean[:i]))
		for at := t0; s.Pending() > 0 && at.Sub(t0) <= TokenHold; at = at.Add(time.Second) {
			got += s.Idle(at)
		}
		if s.Pending() != 0 {
			t.Fatalf("split at %d: %d bytes still held after %v idle", i, s.Pending(), TokenHold)
		}
		got += s.Write([]byte(clean[i:])) + s.Flush()
		if got != clean {
			t.Fatalf("split at %d with a pause: %q", i, got)
		}
	}
}

// An idle stream releases the line up to its last token at once, and the
// token within TokenHold.
func TestStreamIdleReleases(t *testing.T) {
	s := NewStream()
	t0 := time.Unix(1_800_000_000, 0)
	if got := s.Write([]byte("Downloading 45%")); got != "" {
		t.Fatalf("Write released %q", got)
	}
	if got := s.Idle(t0); got != "Downloading " {
		t.Fatalf("Idle released %q", got)
	}
	if got := s.Idle(t0.Add(TokenHold)); got != "45%" {
		t.Fatalf("Idle after TokenHold released %q", got)
	}
	// What starts like a secret is redacted at the first idle, and the rest
	// of it dropped when it comes.
	if got := s.Write([]byte(" key ghp_abcdef")); got != "" {
		t.Fatalf("Write released %q", got)
	}
	if got := s.Idle(t0); got != " key [REDACTED:github-token]" {
		t.Fatalf("Idle released %q", got)
	}
	if got := s.Write([]byte("ghijklmnopqrstuvwxyz0123456789 more\n")); got != " more\n" {
		t.Fatalf("rest of the token: %q", got)
	}
}

// Memory stays bounded whatever the step writes: a line without a break is
// released in pieces.
func TestStreamLongLine(t *testing.T) {
	s := NewStream()
	var n int
	chunk := []byte(strings.Repeat("x", 1000))
	for range 100 {
		n += len(s.Write(chunk))
		if s.Pending() > MaxHold+len(chunk) {
			t.Fatalf("holding %d bytes", s.Pending())
		}
	}
	n += len(s.Flush())
	if n != 100*1000 {
		t.Fatalf("released %d bytes, want %d", n, 100*1000)
	}
	// A long run of base64 lines is held only up to MaxKeyHold.
	s = NewStream()
	line := []byte(strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", 2) + "\n")
	for range 1000 {
		s.Write(line)
		if s.Pending() > MaxKeyHold+len(line) {
			t.Fatalf("holding %d bytes of base64 lines", s.Pending())
		}
	}
}

// Inside a private key, an endless line of key material is dropped, not
// held.
func TestStreamKeyBounded(t *testing.T) {
	s := NewStream()
	if got := s.Write([]byte("-----BEGIN RSA PRIVATE KEY-----\n")); got != "[REDACTED:private-key]\n" {
		t.Fatalf("BEGIN line: %q", got)
	}
	chunk := []byte(strings.Repeat("QUJD", 1000))
	for range 100 {
		if got := s.Write(chunk); got != "" {
			t.Fatalf("released %q", got)
		}
		if s.Pending() > MaxHold+len(chunk) {
			t.Fatalf("holding %d bytes", s.Pending())
		}
	}
	if got := s.Write([]byte("\n-----END RSA PRIVATE KEY-----\nafter\n")) + s.Flush(); got != "after\n" {
		t.Fatalf("after the key: %q", got)
	}
}

// Random chunks and random pauses over every planted input: no secret is
// ever released whole, and with pauses shorter than TokenHold none of it.
func TestStreamRandomChunksAndPauses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ins := streamInputs()
	for round := range 300 {
		in := ins[rng.IntN(len(ins))]
		long := round%3 == 0
		s := NewStream()
		var b strings.Builder
		at := time.Unix(1_800_000_000, 0)
		for i := 0; i < len(in.text); {
			n := 1 + rng.IntN(24)
			b.WriteString(s.Write([]byte(in.text[i:min(i+n, len(in.text))])))
			i += n
			if rng.IntN(3) == 0 {
				pause := time.Duration(rng.IntN(4000)) * time.Millisecond
				if long {
					pause *= 3
				}
				for t0 := at; at.Sub(t0) <= pause && s.Pending() > 0; at = at.Add(250 * time.Millisecond) {
					b.WriteString(s.Idle(at))
				}
			}
		}
		b.WriteString(s.Flush())
		p := leaked(b.String(), Redact(in.text), in.secret)
		if long && p != in.secret {
			p = ""
		}
		if p != "" {
			t.Fatalf("round %d, %s: %q leaked in %q", round, in.name, p, b.String())
		}
	}
}
