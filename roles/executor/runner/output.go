package runner

import (
	"errors"
	"fmt"
	"github.com/agentic-dev/agentic/bus/redact"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	// readSize is the size of one read from a pipe.
	readSize = 32 << 10
	// queueLen bounds the chunks waiting for onOutput: at most about
	// queueLen × (readSize + redact.MaxHold + redact.MaxKeyHold) bytes.
	queueLen = 32
	// drainTimeout bounds the wait for EOF on the pipes once the process
	// group is gone: only a process that left the group (setsid) can hold
	// them open longer, and then the runner stops reading.
	drainTimeout = time.Second
	// idleFlush is how long the step writes nothing more (a progress line,
	// a prompt) before the stream redactor is asked to release what it
	// holds (redact.Stream.Idle: the line up to its last token at once, the
	// token within redact.TokenHold).
	idleFlush = 250 * time.Millisecond
)

// chunk is redacted output on its way to onOutput.
type chunk struct {
	stream string
	data   []byte
}

// capture collects a step's stdout and stderr through two pipes. One reader
// goroutine per pipe reads continuously, so the child never blocks on a
// full pipe; each reader redacts its stream as a stream (redact.Stream: a
// window carried across reads, so a secret written in pieces is redacted
// whole), appends it to the shared tail and offers it to one collector
// goroutine that calls onOutput, started with the first chunk (a step
// that writes nothing needs none).
// When onOutput falls behind, chunks are dropped from the stream (never from
// the tail) and a notice says how many bytes were lost. Memory is bounded by
// the tail, the readers' buffers and the queue, whatever the child writes.
type capture struct {
	outR, outW, errR, errW *os.File

	tailBytes int
	tailMu    sync.Mutex
	tail      []byte // redacted combined output; the last tailBytes count

	onOutput func(stream string, chunk []byte)
	// collectOnce starts the collector and makes queue; done is closed
	// when the collector returned.
	collectOnce sync.Once
	queue       chan chunk
	done        chan struct{}
	// readers counts the readers still reading; the last one closes eof.
	readers atomic.Int32
	eof     chan struct{}
}

func newCapture(tailBytes int, onOutput func(string, []byte)) (*capture, error) {
	c := &capture{tailBytes: tailBytes, onOutput: onOutput}
	var err error
	if c.outR, c.outW, err = pipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if c.errR, c.errW, err = pipe(); err != nil {
		c.outR.Close()
		c.outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return c, nil
}

// pipe is os.Pipe with only the read end in the runtime's poller (it
// reads with deadlines and parks its goroutine, not a thread, while the
// pipe is empty): the write end is the child's stdout or stderr, held by
// the runner only until the child starts, so it is a plain blocking file
// — never registered with the poller, nor switched to non-blocking and
// back, as os.Pipe's would be.
func pipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// start begins reading; call it once the child holds the write ends.
func (c *capture) start() {
	c.closeWriters()
	c.eof = make(chan struct{})
	c.readers.Store(2)
	go c.read(StreamStdout, c.outR)
	go c.read(StreamStderr, c.errR)
}

// abort releases the pipes of a child that never started.
func (c *capture) abort() {
	c.closeWriters()
	c.outR.Close()
	c.errR.Close()
}

func (c *capture) closeWriters() {
	c.outW.Close()
	c.errW.Close()
}

// wait returns once both streams are read to the end (or drainTimeout
// passed) and onOutput has seen every chunk.
func (c *capture) wait() {
	select {
	case <-c.eof:
	default:
		t := time.NewTimer(drainTimeout)
		select {
		case <-c.eof:
			t.Stop()
		case <-t.C:
			// Someone outside the process group holds the pipes: stop reading.
			c.outR.Close()
			c.errR.Close()
			<-c.eof
		}
	}
	// The readers are done: no collector starts after this.
	if c.queue != nil {
		close(c.queue)
		<-c.done
	}
	c.outR.Close()
	c.errR.Close()
}

// send hands ch to the collector, starting it the first time; unless
// block, it gives up at once when the queue is full.
func (c *capture) send(ch chunk, block bool) bool {
	c.collectOnce.Do(func() {
		c.queue = make(chan chunk, queueLen)
		c.done = make(chan struct{})
		go c.collect()
	})
	if block {
		c.queue <- ch
		return true
	}
	select {
	case c.queue <- ch:
		return true
	default:
		return false
	}
}

func (c *capture) collect() {
	defer close(c.done)
	for ch := range c.queue {
		c.onOutput(ch.stream, ch.data)
	}
}

func (c *capture) read(stream string, f *os.File) {
	defer func() {
		if c.readers.Add(-1) == 0 {
			close(c.eof)
		}
	}()
	lr := redact.NewStream()
	var dropped int
	buf := make([]byte, readSize)
	deadline := false
	for {
		if hold := lr.Pending() > 0; hold || deadline {
			// A failing SetReadDeadline only costs the idle flush.
			if hold {
				_ = f.SetReadDeadline(time.Now().Add(idleFlush))
			} else {
				_ = f.SetReadDeadline(time.Time{})
			}
			deadline = hold
		}
		n, err := f.Read(buf)
		if n > 0 {
			c.emit(stream, lr.Write(buf[:n]), &dropped, false)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.emit(stream, lr.Idle(time.Now()), &dropped, false)
			continue
		}
		if err != nil {
			break
		}
	}
	c.emit(stream, lr.Flush(), &dropped, true)
}

// emit hands redacted text to the tail and the stream. Only the final emit
// of a stream may block (the child has closed its end by then).
func (c *capture) emit(stream, text string, dropped *int, final bool) {
	if text != "" {
		c.appendTail(text)
	}
	if c.onOutput == nil || (text == "" && (!final || *dropped == 0)) {
		return
	}
	data := []byte(text)
	if *dropped > 0 {
		notice := fmt.Sprintf("[agentic: %d bytes of %s dropped: log consumer too slow]\n", *dropped, stream)
		data = append([]byte(notice), data...)
	}
	if c.send(chunk{stream, data}, final) {
		*dropped = 0
	} else {
		*dropped += len(text)
	}
}

func (c *capture) appendTail(text string) {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	if len(text) >= c.tailBytes {
		c.tail = append(c.tail[:0], text[len(text)-c.tailBytes:]...)
		return
	}
	c.tail = append(c.tail, text...)
	if len(c.tail) > 2*c.tailBytes {
		n := copy(c.tail, c.tail[len(c.tail)-c.tailBytes:])
		c.tail = c.tail[:n]
	}
}

// tailString is the redacted end of the output, at most tailBytes long. The
// tail is redacted again as a whole: the stream redaction saw it in pieces.
func (c *capture) tailString() string {
	c.tailMu.Lock()
	t := c.tail
	if len(t) > c.tailBytes {
		t = t[len(t)-c.tailBytes:]
	}
	s := trimRuneStart(string(t))
	c.tailMu.Unlock()
	s = redact.Redact(s)
	if len(s) > c.tailBytes {
		s = trimRuneStart(s[len(s)-c.tailBytes:])
	}
	return s
}

// trimRuneStart drops the bytes of a rune cut in half at the start of s.
func trimRuneStart(s string) string {
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}
