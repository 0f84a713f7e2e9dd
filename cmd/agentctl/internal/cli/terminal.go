package cli

import (
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// Text output meets a terminal, and the text comes from plans, models,
// commands' output and step ids nobody checked: a control byte in it
// (ESC, CR, NUL…) would move the cursor, erase a line or retitle the
// window, and show an operator something else than what is there. So
// every byte written as text goes through a termWriter, which shows each
// control character as an escape instead: C0 bytes other than \n and \t,
// and DEL, as \xHH (\x1b, \x00; CR as \r); C1 controls and the bidirectional
// overrides and isolates as \uHHHH; a byte that is not UTF-8 as \xHH.
// JSON output is not touched: encoding/json already escapes what matters
// in strings, and programs need the exact text.
//
// The CLI's own styling (bold, reverse video, dim on a terminal) is the
// only thing written around it, through writeStyled, by code that escapes
// the text it styles with escapeText.

// termWriter escapes control characters on their way to w (see above).
// A UTF-8 sequence cut by the end of a write is held until the next write
// completes it; Flush escapes one never completed.
type termWriter struct {
	mu sync.Mutex
	w  io.Writer
	// on says whether to escape now (nil: always): stdout escapes only in
	// text output mode.
	on func() bool
	// held is the start of a UTF-8 sequence the last write cut.
	held []byte
}

func newTermWriter(w io.Writer, on func() bool) *termWriter {
	return &termWriter{w: w, on: on}
}

// Write escapes p, holding back an incomplete UTF-8 sequence at its end.
func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on != nil && !t.on() {
		if err := t.flushLocked(); err != nil {
			return 0, err
		}
		return t.w.Write(p)
	}
	data := p
	if len(t.held) > 0 {
		data = append(t.held, p...)
		t.held = nil
	}
	keep := incompleteTail(data)
	out := appendEscaped(make([]byte, 0, len(data)+16), data[:len(data)-keep])
	t.held = append([]byte(nil), data[len(data)-keep:]...)
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete UTF-8 sequence, escaped.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flushLocked()
}

func (t *termWriter) flushLocked() error {
	if len(t.held) == 0 {
		return nil
	}
	out := appendEscaped(nil, t.held)
	t.held = nil
	_, err := t.w.Write(out)
	return err
}

// writeRaw writes s as it is: text the caller escaped, with its styling.
func (t *termWriter) writeRaw(s string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flushLocked(); err != nil {
		return err
	}
	_, err := io.WriteString(t.w, s)
	return err
}

// writeStyled writes s, whose text its caller escaped with escapeText and
// styled with the CLI's own escape sequences, past w's escaping.
func writeStyled(w io.Writer, s string) error {
	if t, ok := w.(*termWriter); ok {
		return t.writeRaw(s)
	}
	_, err := io.WriteString(w, s)
	return err
}

// rawWriter is the writer under w's escaping: for output that is data,
// not text (ledger export's JSON Lines), and for progress lines that
// rewrite themselves with \r.
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(*termWriter); ok {
		_ = t.Flush()
		return t.w
	}
	return w
}

// incompleteTail is how many bytes at the end of b start a UTF-8 sequence
// that b cuts.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}

// escapeText is s with its control characters escaped as termWriter
// escapes them. It is idempotent: its output holds no control character.
func escapeText(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return string(appendEscaped(make([]byte, 0, len(s)+16), []byte(s)))
		}
	}
	return s
}

// appendEscaped appends b to dst, its control characters escaped.
func appendEscaped(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			dst = fmt.Appendf(dst, `\x%02x`, b[i])
			n = 1
		case r == '\n' || r == '\t':
			dst = append(dst, byte(r))
		case r == '\r':
			dst = append(dst, `\r`...)
		case r < 0x20 || r == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, r)
		case isHiddenControl(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, b[i:i+n]...)
		}
		i += n
	}
	return dst
}

// isHiddenControl reports the C1 controls (some terminals obey them as
// ESC sequences) and the Unicode bidirectional controls (they reorder
// what is shown: a command can read backwards).
func isHiddenControl(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
