package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
)

// Live step output. A step's panel follows what the step writes from the
// logs stream (AGENTIC_LOGS, redacted by the executor before it is
// written, as all output is) over its own Server-Sent Events stream,
// GET /runs/{id}/steps/{step}/output. The node's follower hands chunks to
// a bounded buffer and never waits for the browser; the stream sends
// what the buffer holds at most once a frame, coalesced; a browser that
// falls behind loses the oldest chunks and is told how many bytes it
// missed. Each frame's id is the stream sequence of its last chunk, so a
// browser that reconnects (Last-Event-ID) gets only what came after.

// OutputChunk is one chunk of a step's output as the logs stream holds
// it.
type OutputChunk struct {
	// Seq is the chunk's logs-stream sequence.
	Seq uint64
	// Attempt is the step attempt that wrote it, Stream stdout or stderr.
	Attempt int
	Stream  string
	Data    []byte
}

// Output follows one step's output: it calls each for every chunk after
// stream sequence after (0: from the first), oldest first, until ctx ends
// (then it returns nil) or the stream fails. each never blocks.
type Output = func(ctx context.Context, run, step string, after uint64, each func(OutputChunk)) error

// Bounds of the live output.
const (
	// outputBuffer bounds the bytes of output held for one browser.
	outputBuffer = 256 << 10
	// maxOutputStreams bounds the output streams one dashboard serves at
	// once (each is a consumer on the logs stream).
	maxOutputStreams = 64
)

// outputBuf holds the chunks a browser has not been sent yet.
type outputBuf struct {
	mu      sync.Mutex
	chunks  []OutputChunk
	bytes   int
	skipped int
	wake    chan struct{}
}

// add keeps c, dropping the oldest chunks past outputBuffer; it never
// blocks.
func (b *outputBuf) add(c OutputChunk) {
	b.mu.Lock()
	b.chunks = append(b.chunks, c)
	b.bytes += len(c.Data)
	for b.bytes > outputBuffer && len(b.chunks) > 1 {
		b.bytes -= len(b.chunks[0].Data)
		b.skipped += len(b.chunks[0].Data)
		b.chunks = b.chunks[1:]
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// take empties the buffer.
func (b *outputBuf) take() ([]OutputChunk, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs, sk := b.chunks, b.skipped
	b.chunks, b.bytes, b.skipped = nil, 0, 0
	return cs, sk
}

// outputPiece is what a frame sends of consecutive chunks of one attempt
// and stream.
type outputPiece struct {
	Attempt int    `json:"a"`
	Stream  string `json:"s"`
	Text    string `json:"t"`
}

// outputFrame is one frame of the output stream: the output since the
// last frame, and the bytes dropped before it reached the browser.
type outputFrame struct {
	Chunks  []outputPiece `json:"chunks"`
	Skipped int           `json:"skipped,omitempty"`
}

func coalesce(cs []OutputChunk) []outputPiece {
	var out []outputPiece
	for _, c := range cs {
		if n := len(out); n > 0 && out[n-1].Attempt == c.Attempt && out[n-1].Stream == c.Stream {
			out[n-1].Text += string(c.Data)
			continue
		}
		out = append(out, outputPiece{Attempt: c.Attempt, Stream: c.Stream, Text: string(c.Data)})
	}
	return out
}

// stepOutput streams one step's output.
func (s *Server) stepOutput(w http.ResponseWriter, r *http.Request) {
	if s.src.Output == nil {
		http.Error(w, "this node does not follow step output", http.StatusNotFound)
		return
	}
	step := r.PathValue("step")
	if err := event.ValidStepID(step); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	from := r.URL.Query().Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		from = id
	}
	after, err := strconv.ParseUint(from, 10, 64)
	if err != nil && from != "" {
		http.Error(w, fmt.Sprintf("after %q is not a logs-stream sequence", from), http.StatusBadRequest)
		return
	}
	if s.outputs.Add(1) > maxOutputStreams {
		s.outputs.Add(-1)
		http.Error(w, "too many step outputs are followed on this node: close some panels and try again", http.StatusServiceUnavailable)
		return
	}
	defer s.outputs.Add(-1)
	ctx, done := s.streamCtx(r)
	defer done()
	d, err := s.src.Runs.Get(ctx, apiwire.RunsGetRequest{ID: r.PathValue("id"), Limit: 1})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := startSSE(w)
	if err != nil {
		return
	}
	buf := &outputBuf{wake: make(chan struct{}, 1)}
	failed := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		failed <- s.src.Output(ctx, d.Run.ID, step, after, buf.add)
	}()
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-failed:
			if err != nil && ctx.Err() == nil {
				_ = e.send("", "problem", "following the output: "+err.Error())
			}
			return
		case <-ka.C:
			if e.comment() != nil {
				return
			}
		case <-buf.wake:
			// Coalesce: what arrives within a frame goes in one.
			t := time.NewTimer(s.hub.frame)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			cs, skipped := buf.take()
			if len(cs) == 0 {
				continue
			}
			id := strconv.FormatUint(cs[len(cs)-1].Seq, 10)
			if e.send(id, "output", outputFrame{Chunks: coalesce(cs), Skipped: skipped}) != nil {
				return
			}
		}
	}
}
