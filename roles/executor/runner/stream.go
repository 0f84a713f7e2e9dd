package runner

import (
	"bytes"
	"github.com/agentic-dev/agentic/bus/redact"
	"regexp"
	"strings"
)

// maxHold bounds how much of an unterminated line a lineRedactor holds back
// waiting for its newline; a longer line is redacted in pieces.
const maxHold = 8 << 10

var (
	keyBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
	keyEnd   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY-----`)
)

// lineRedactor redacts one output stream as it arrives. It releases only
// whole lines, holding back an unterminated last line (up to maxHold bytes),
// so a secret split across two reads is usually seen whole; and it remembers
// an open private-key block across chunks so that the block's body lines are
// dropped until its END line. Not safe for concurrent use: one per stream.
type lineRedactor struct {
	pending []byte
	inKey   bool
}

// write consumes p and returns the redacted text ready to be released,
// possibly empty.
func (r *lineRedactor) write(p []byte) string {
	r.pending = append(r.pending, p...)
	cut := bytes.LastIndexByte(r.pending, '\n') + 1
	if cut == 0 {
		if len(r.pending) < maxHold {
			return ""
		}
		cut = len(r.pending)
	}
	text := string(r.pending[:cut])
	r.pending = append(r.pending[:0], r.pending[cut:]...)
	return r.redact(text)
}

// flush releases whatever is held back, at the end of the stream.
func (r *lineRedactor) flush() string {
	text := string(r.pending)
	r.pending = r.pending[:0]
	return r.redact(text)
}

func (r *lineRedactor) redact(text string) string {
	if r.inKey {
		end := keyEnd.FindStringIndex(text)
		if end == nil {
			return "" // still inside a private key: the BEGIN line was already replaced
		}
		r.inKey = false
		text = text[end[1]:]
	}
	r.inKey = openKeyBlock(text)
	out := redact.Redact(text)
	if r.inKey && strings.HasSuffix(text, "\n") && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// openKeyBlock reports whether text ends inside a private-key block: its
// last BEGIN line has no END line after it.
func openKeyBlock(text string) bool {
	if !strings.Contains(text, "PRIVATE KEY-----") {
		return false
	}
	all := keyBegin.FindAllStringIndex(text, -1)
	if len(all) == 0 {
		return false
	}
	last := all[len(all)-1]
	return keyEnd.FindStringIndex(text[last[1]:]) == nil
}
