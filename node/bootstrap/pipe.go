package bootstrap

import (
	"io"
	"sync"
)

// pipe is an io.Pipe with a bounded buffer: the writer (pages arriving
// from the peer) runs ahead of the reader (the import) by up to depth
// writes, so that fetching the next page overlaps importing the last one,
// while memory stays bounded by depth writes (the writer's bufio chunks).
type pipe struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	werr error // why writing ended (nil: io.EOF for the reader)
	rerr error // why reading ended
	cur  []byte
}

func newPipe(depth int) *pipe {
	return &pipe{ch: make(chan []byte, depth), done: make(chan struct{})}
}

// Write queues a copy of b; it fails once the reader has closed.
func (p *pipe) Write(b []byte) (int, error) {
	select {
	case p.ch <- append([]byte(nil), b...):
		return len(b), nil
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return 0, p.rerr
	}
}

// CloseWrite ends the writing side: the reader gets err after the queued
// data (io.EOF when err is nil).
func (p *pipe) CloseWrite(err error) {
	p.mu.Lock()
	p.werr = err
	p.mu.Unlock()
	close(p.ch)
}

// Read returns queued data, then the writer's error or io.EOF.
func (p *pipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		next, ok := <-p.ch
		if !ok {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.werr != nil {
				return 0, p.werr
			}
			return 0, io.EOF
		}
		p.cur = next
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// CloseRead ends the reading side: a blocked or later Write returns err.
func (p *pipe) CloseRead(err error) {
	p.once.Do(func() {
		p.mu.Lock()
		p.rerr = err
		p.mu.Unlock()
		close(p.done)
	})
}
