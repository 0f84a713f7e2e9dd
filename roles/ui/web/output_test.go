package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/roles/ui/web"
)

// logStream is an in-memory logs stream: chunks in order, numbered from 1,
// and followers woken when one is added.
type logStream struct {
	mu      sync.Mutex
	chunks  []web.OutputChunk
	subject []string // run/step of each chunk
	changed chan struct{}
}

func newLogStream() *logStream { return &logStream{changed: make(chan struct{})} }

func (s *logStream) add(run, step string, attempt int, stream, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = append(s.chunks, web.OutputChunk{Seq: uint64(len(s.chunks) + 1), Attempt: attempt, Stream: stream, Data: []byte(text)})
	s.subject = append(s.subject, run+"/"+step)
	close(s.changed)
	s.changed = make(chan struct{})
}

// follow is web.Source.Output over the stream.
func (s *logStream) follow(ctx context.Context, run, step string, after uint64, each func(web.OutputChunk)) error {
	next := after
	for {
		s.mu.Lock()
		var out []web.OutputChunk
		for i := int(next); i < len(s.chunks); i++ {
			if s.subject[i] == run+"/"+step {
				out = append(out, s.chunks[i])
			}
		}
		next = uint64(len(s.chunks))
		ch := s.changed
		s.mu.Unlock()
		for _, c := range out {
			each(c)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		}
	}
}

type outputFrame struct {
	Chunks []struct {
		A int    `json:"a"`
		S string `json:"s"`
		T string `json:"t"`
	} `json:"chunks"`
	Skipped int `json:"skipped"`
}

func outputServer(t *testing.T, logs *logStream) string {
	t.Helper()
	l := newLedger()
	smallRun(l)
	src := l.source()
	src.Output = logs.follow
	s, err := web.New(src, web.Options{Frame: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })
	return srv.URL
}

// A step's output streams live to its panel: what the step wrote so far,
// then each new chunk, with the stream sequence as the event id; a
// browser that reconnects with Last-Event-ID gets only what came after.
// Other steps' output is not sent.
func TestStepOutputStreams(t *testing.T) {
	logs := newLogStream()
	logs.add(runID, "diagnose", 1, "stdout", "compiling\n")
	logs.add(runID, "fetch", 1, "stdout", "not mine\n")
	base := outputServer(t, logs)
	url := base + "/runs/" + runID + "/steps/diagnose/output"
	ch, stop := stream(t, url, "")
	e := next(t, ch, "output")
	var f outputFrame
	if err := json.Unmarshal([]byte(e.data), &f); err != nil || len(f.Chunks) != 1 || f.Chunks[0].T != "compiling\n" || f.Chunks[0].A != 1 || e.id != "1" {
		t.Fatalf("first frame %q (id %s): %+v %v", e.data, e.id, f, err)
	}
	logs.add(runID, "diagnose", 1, "stderr", "warning: <script>\n")
	e = next(t, ch, "output")
	f = outputFrame{}
	if err := json.Unmarshal([]byte(e.data), &f); err != nil || len(f.Chunks) != 1 || f.Chunks[0].S != "stderr" || e.id != "3" {
		t.Fatalf("second frame %q (id %s): %+v %v", e.data, e.id, f, err)
	}
	stop()
	logs.add(runID, "diagnose", 2, "stdout", "again\n")
	ch, stop = stream(t, url, "3")
	defer stop()
	e = next(t, ch, "output")
	f = outputFrame{}
	if err := json.Unmarshal([]byte(e.data), &f); err != nil || len(f.Chunks) != 1 || f.Chunks[0].T != "again\n" || f.Chunks[0].A != 2 {
		t.Fatalf("after a reconnect: %q: %+v %v", e.data, f, err)
	}
}

// A browser that does not read never holds up the node: the follower's
// callback never blocks, what the browser has not taken is bounded, and
// when it reads again it is told how much it missed.
func TestStepOutputSlowBrowser(t *testing.T) {
	logs := newLogStream()
	base := outputServer(t, logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/runs/"+runID+"/steps/diagnose/output", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 8 MiB of output while the browser reads nothing.
	line := strings.Repeat("x", 1023) + "\n"
	start := time.Now()
	for range 8192 {
		logs.add(runID, "diagnose", 1, "stdout", line)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("writing the output took %s with a browser not reading", d)
	}
	ch := readEvents(t, resp.Body)
	skipped, got := 0, 0
	for skipped+got < 8192*1024 {
		e := next(t, ch, "output")
		var f outputFrame
		if err := json.Unmarshal([]byte(e.data), &f); err != nil {
			t.Fatal(err)
		}
		skipped += f.Skipped
		for _, c := range f.Chunks {
			got += len(c.T)
		}
	}
	if skipped == 0 || got > 4<<20 {
		t.Fatalf("the browser got %d bytes and was told of %d skipped: want the buffer bounded", got, skipped)
	}
}
