package bootstrap

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The reader gets every byte in order, then io.EOF or the writer's error;
// a writer blocked on a full pipe is released when the reader closes.
func TestPipe(t *testing.T) {
	p := newPipe(2)
	var want bytes.Buffer
	done := make(chan error, 1)
	go func() {
		for i := range 100 {
			b := bytes.Repeat([]byte{byte(i)}, i+1)
			want.Write(b)
			if _, err := p.Write(b); err != nil {
				done <- err
				return
			}
		}
		p.CloseWrite(nil)
		done <- nil
	}()
	got, err := io.ReadAll(p)
	if err != nil || <-done != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, want.Len())
	}

	p = newPipe(1)
	boom := errors.New("boom")
	go func() { p.Write([]byte("a")); p.CloseWrite(boom) }()
	if _, err := io.ReadAll(p); !errors.Is(err, boom) {
		t.Fatalf("read after the writer failed: %v, want boom", err)
	}

	p = newPipe(1)
	stopped := errors.New("stopped")
	go func() {
		for {
			if _, err := p.Write([]byte("x")); err != nil {
				done <- err
				return
			}
		}
	}()
	p.CloseRead(stopped)
	if err := <-done; !errors.Is(err, stopped) {
		t.Fatalf("write after the reader closed: %v, want stopped", err)
	}
}
