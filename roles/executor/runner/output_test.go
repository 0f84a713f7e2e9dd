package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// A step writing 50 MB is read to the end with bounded memory: everything
// reaches onOutput, the tail holds only TailBytes.
func TestLargeOutputBoundedMemory(t *testing.T) {
	const total = 50 << 20
	var got atomic.Int64
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	wg.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	})
	spec := shellSpec(`yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 52428800; echo; echo last line`)
	// On a loaded machine the stream may fall behind and drop chunks, with
	// a notice saying how many bytes; those count as accounted for.
	notice := regexp.MustCompile(`\[agentic: (\d+) bytes of \w+ dropped: log consumer too slow\]\n`)
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil,
		func(_ string, chunk []byte) {
			n := int64(len(chunk))
			for _, m := range notice.FindAllSubmatch(chunk, -1) {
				d, _ := strconv.Atoi(string(m[1]))
				n += int64(d - len(m[0]))
			}
			got.Add(n)
		})
	close(stop)
	wg.Wait()
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	if want := int64(total + len("\nlast line\n")); got.Load() != want {
		t.Errorf("onOutput got %d bytes, want %d", got.Load(), want)
	}
	if len(res.OutputTail) > DefaultTailBytes || !strings.HasSuffix(res.OutputTail, "\nlast line\n") {
		t.Errorf("OutputTail is %d bytes ending %q", len(res.OutputTail), res.OutputTail[max(0, len(res.OutputTail)-40):])
	}
	if grew := int64(peak.Load()) - int64(base); grew > 24<<20 {
		t.Errorf("heap grew by %d MiB while reading 50 MiB", grew>>20)
	}
	t.Logf("heap in use: base %d KiB, peak %d KiB; took %s", base>>10, peak.Load()>>10, res.Duration)
}

// A consumer that stalls must not block the step: the step finishes while
// onOutput is still stuck, chunks are dropped with a notice, and the tail
// is complete.
func TestSlowConsumerNeverBlocksStep(t *testing.T) {
	dir := t.TempDir()
	finished := filepath.Join(dir, "finished")
	spec := shellSpec(`head -c 20000000 /dev/zero | tr '\0' 'x'; echo; echo end; touch finished`)
	var first sync.Once
	var blocked bool
	var text strings.Builder
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, func(_ string, chunk []byte) {
		first.Do(func() {
			// Stall until the step has written everything and exited.
			blocked = poll.Wait(20*time.Second, func() bool {
				_, err := os.Stat(finished)
				return err == nil
			}) != nil
		})
		text.Write(chunk)
	})
	if blocked {
		t.Fatal("the step could not finish while onOutput stalled")
	}
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	if !strings.Contains(text.String(), "bytes of stdout dropped: log consumer too slow]") {
		t.Error("no drop notice in the stream")
	}
	if !strings.HasSuffix(res.OutputTail, "\nend\n") {
		t.Errorf("tail ends %q", res.OutputTail[max(0, len(res.OutputTail)-20):])
	}
}

// Secrets never leave the runner: not in streamed chunks even when the
// step writes them in pieces, not in the tail.
func TestOutputIsRedacted(t *testing.T) {
	spec := shellSpec(`echo "connecting with password=hunter2"
printf 'tok'; sleep 0.05; printf 'en=abcdef0123\n'
echo AKIAIOSFODNN7EXAMPLE >&2
printf -- '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3y\n'; sleep 0.05
printf 'AoGCCqGSM49AwEHoUQDQgAE\n-----END EC PRIVATE KEY-----\n'
echo done`)
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	streamed := out.text(StreamStdout) + out.text(StreamStderr)
	for _, secret := range []string{"hunter2", "abcdef0123", "AKIAIOSFODNN7EXAMPLE", "MHcCAQEEIBkg4LVWM9nuwNSk3y", "AoGCCqGSM49AwEHoUQDQgAE"} {
		if strings.Contains(streamed, secret) {
			t.Errorf("%q streamed: %q", secret, streamed)
		}
		if strings.Contains(res.OutputTail, secret) {
			t.Errorf("%q in tail: %q", secret, res.OutputTail)
		}
	}
	for _, keep := range []string{"password=[REDACTED:secret-assignment]\n", "token=[REDACTED:secret-assignment]\n", "done\n"} {
		if !strings.Contains(out.text(StreamStdout), keep) {
			t.Errorf("stdout lacks %q: %q", keep, out.text(StreamStdout))
		}
	}
	if redact.ContainsSecret(res.OutputTail) {
		t.Errorf("tail still holds a secret: %q", res.OutputTail)
	}
}

func TestTailKeepsEnd(t *testing.T) {
	c := &capture{tailBytes: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "12", "345"} {
		c.appendTail(s)
		if len(c.tail) > 3*c.tailBytes {
			t.Fatalf("tail buffer holds %d bytes", len(c.tail))
		}
	}
	if got := c.tailString(); got != "xyz12345" {
		t.Fatalf("tailString = %q, want %q", got, "xyz12345")
	}
	c = &capture{tailBytes: 6}
	c.appendTail("ab€cdef") // € is 3 bytes: the cut lands inside it
	if got := c.tailString(); got != "cdef" {
		t.Fatalf("tailString = %q, want %q", got, "cdef")
	}
}

// An unterminated line (a progress message, a prompt) reaches onOutput
// while the step is still running, once the step pauses.
func TestPartialLineStreamedWhenIdle(t *testing.T) {
	dir := t.TempDir()
	spec := shellSpec(`printf 'working...'; while [ ! -f go ]; do sleep 0.01; done; echo ok`)
	spec.Timeout = 10 * time.Second
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: dir}, nil, func(stream string, chunk []byte) {
		out.on(stream, chunk)
		if strings.Contains(string(chunk), "working...") {
			_ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
		}
	})
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v: the partial line was held back", res)
	}
	if got := out.text(StreamStdout); got != "working...ok\n" {
		t.Fatalf("stdout = %q", got)
	}
}

// Planted secrets of every shape, on stdout and stderr, each printed in two
// pieces with a pause longer than the idle flush between them: none is
// streamed or kept in the tail, in whole or in part.
func TestPlantedSecretsSplitWithPause(t *testing.T) {
	secrets := []struct{ first, rest, secret string }{
		{"STRIPE=sk_live_51H8xQ2", "LkdIwHu7ixyzAbCdEf0123", "LkdIwHu7ixyzAbCdEf0123"},
		{"key AIzaSyD-9tSrke7", "2PouQMnMX-a7eZSW0jkFMBWY", "2PouQMnMX-a7eZSW0jkFMBWY"},
		{"glpat-xR4nD0m", "T0k3nV4lu3zzZ9", "T0k3nV4lu3zzZ9"},
		{"npm_aB3dE5fG7hI9jK1", "lM3nO5pQ7rS9tU1vW3xY5", "lM3nO5pQ7rS9tU1vW3xY5"},
		{"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0", "NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
		{"secret: wJalrXUtnFEMI/K7M", "DENG/bPxRfiCYEXAMPLEKEY", "DENG/bPxRfiCYEXAMPLEKEY"},
		{"mysql -u root -pS3cr", "etPW -h db", "etPW"},
		{"sshpass -p Pa55w", "ord9 ssh host", "ord9"},
		{"docker login -u bob -p dckrP", "W123 reg.example.com", "W123"},
		{"curl -u bob:curlP", "W99 https://x", "W99"},
		{"MYSQL_PWD=myPWv", "alue1 mysql", "alue1"},
		{"password hunt", "er2xyz", "er2xyz"},
	}
	var script strings.Builder
	for i, s := range secrets {
		fd := ""
		if i%2 == 1 {
			fd = " >&2"
		}
		fmt.Fprintf(&script, "printf '%%s' '%s'%s; sleep 0.4; printf '%%s\\n' '%s'%s\n", s.first, fd, s.rest, fd)
	}
	script.WriteString("echo done\n")
	spec := shellSpec(script.String())
	spec.Timeout = 30 * time.Second
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	streamed := out.text(StreamStdout) + "\n" + out.text(StreamStderr)
	for _, s := range secrets {
		if strings.Contains(streamed, s.secret) || strings.Contains(streamed, s.first+s.rest) {
			t.Errorf("%q streamed: %q", s.first+s.rest, streamed)
		}
		if strings.Contains(res.OutputTail, s.secret) {
			t.Errorf("%q in tail: %q", s.secret, res.OutputTail)
		}
	}
	if !strings.Contains(out.text(StreamStdout), "done\n") || strings.Count(streamed, "[REDACTED:") < len(secrets) {
		t.Errorf("streamed: %q", streamed)
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

// The hostile case as it was found: a secret printed in two chunks 2.5 s
// apart (well past the idle flush), split where the first chunk looks like
// a secret's start and where it does not.
func TestSecretPrintedInTwoChunksSecondsApart(t *testing.T) {
	spec := shellSpec(`printf 'key ghp_abcdefghij'; printf 'maps AIz' >&2; sleep 2.5
printf 'klmnopqrstuvwxyz0123456789 ok\n'; printf 'aSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY ok\n' >&2`)
	spec.Timeout = 20 * time.Second
	var out output
	res := Run(context.Background(), spec, Options{DefaultCwd: t.TempDir()}, nil, out.on)
	if res.Status != event.TaskSucceeded {
		t.Fatalf("Run = %+v", res)
	}
	stdout, stderr := out.text(StreamStdout), out.text(StreamStderr)
	if stdout != "key [REDACTED:github-token] ok\n" {
		t.Errorf("stdout = %q", stdout)
	}
	if stderr != "maps [REDACTED:gcp-api-key] ok\n" {
		t.Errorf("stderr = %q", stderr)
	}
	for _, piece := range []string{"abcdefghij", "klmnop", "AIz", "aSyD"} {
		if strings.Contains(res.OutputTail, piece) {
			t.Errorf("%q in tail %q", piece, res.OutputTail)
		}
	}
}
