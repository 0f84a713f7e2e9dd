package redact

import (
	"strings"
	"time"
)

// Limits of a Stream.
const (
	// MaxHold bounds how much of an unterminated line a Stream holds back
	// waiting for its end; a longer line is released up to its last token.
	MaxHold = 8 << 10
	// MaxKeyHold bounds the run of base64 lines a Stream holds back in case
	// a private key's END line follows them.
	MaxKeyHold = 16 << 10
	// TokenHold is how long a Stream, idle, holds back the last token of an
	// unterminated line (or a run of base64 lines) that does not look like
	// the start of a secret, in case the rest of a secret follows. What
	// looks like the start of one is never released: it is redacted at the
	// first idle flush and the rest of it is dropped when it comes.
	TokenHold = 5 * time.Second
	// maxContext bounds the context a Stream keeps of the current line's
	// released text.
	maxContext = 1 << 10
)

var (
	keyEnd    = lazy(`-----END [A-Z0-9 ]*PRIVATE KEY-----`)
	base64Ln  = lazy(`^[ \t]*[A-Za-z0-9+/=]{16,}\r?$`)
	pemHeader = lazy(`^[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z-]+: .*)\r?$`)
)

// probes complete the last token of an idle stream to ask whether it could
// be the start of a secret: a rule that matches token+probe over the token
// says it could.
var probes = []string{
	"A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8U9v0W1x2Y3z4A5b6C7d8E9f0G1h2J3k4L5m6N7p8Q9r0",
	"A1B2C3D4E5F6G7H8J9K0L1M2N3P4Q5R6S7T8U9V0",
	"A1b2C3d4E5f6@x",                            // URL userinfo
	".A1b2C3d4E5f6G7h8J9k0",                     // a JWT's signature
	".eyJA1b2C3d4E5f6G7h8J9k0.A1b2C3d4E5f6G7h8", // a JWT's payload and signature
}

// Stream redacts one output stream (a step's stdout or stderr) as it
// arrives, with a window carried across chunk boundaries: a secret split
// across writes — at any byte, with any pause between — is redacted whole,
// never released in part. It releases whole lines; it holds back an
// unterminated line, and a run of base64 lines that could be the body of
// a private key whose END line is still to come, and remembers an open
// private key block and the context of a line released in part. Idle
// releases what it can after a pause, Flush everything at the end. Not
// safe for concurrent use: one per stream.
type Stream struct {
	ctx     string // raw text of the current line already released
	pending []byte // raw text not yet released
	swallow bool   // a secret was redacted before its end: drop the rest of its token
	quote   byte   // while swallowing a quoted value: its quote, which ends it
	inKey   bool   // inside a private key: drop its lines up to the END line
	heldAt  time.Time
}

// NewStream returns a stream redactor.
func NewStream() *Stream { return &Stream{} }

// Pending is how many bytes the stream holds back.
func (s *Stream) Pending() int { return len(s.pending) }

// Write consumes p and returns the redacted text ready to be released,
// possibly empty.
func (s *Stream) Write(p []byte) string {
	s.pending = append(s.pending, p...)
	s.heldAt = time.Time{}
	return s.release(modeWrite, time.Time{})
}

// Idle releases, after a pause in the output at now, what can be released
// without releasing part of a secret: the held line up to its last token,
// and that token once it has been held TokenHold (or, if it looks like
// the start of a secret, its label at once; the rest of it is dropped when
// it comes). Call it again while Pending is not zero.
func (s *Stream) Idle(now time.Time) string {
	if s.heldAt.IsZero() {
		s.heldAt = now
	}
	return s.release(modeIdle, now)
}

// Flush releases everything held, at the end of the stream.
func (s *Stream) Flush() string {
	out := s.release(modeFlush, time.Time{})
	s.ctx, s.swallow, s.inKey, s.quote = "", false, false, 0
	return out
}

type mode int

const (
	modeWrite mode = iota
	modeIdle
	modeFlush
)

func (s *Stream) release(m mode, now time.Time) string {
	var out strings.Builder
	expired := m == modeIdle && now.Sub(s.heldAt) >= TokenHold
	for {
		if s.swallow && !s.dropToken() {
			return out.String()
		}
		if s.inKey && !s.dropKey(m != modeWrite) {
			return out.String()
		}
		if s.swallow || s.inKey {
			continue
		}
		break
	}
	cut := lastBreak(s.pending)
	if expired && cut > 0 {
		// A run of base64 lines held for TokenHold: released, unless its
		// lines have the width and randomness of a key's body, which is
		// redacted (and the rest of the key dropped as it comes).
		start := s.holdBase64Run(cut)
		run := string(s.pending[start:cut])
		if start == 0 {
			run = s.ctx + run // the start of its first line went out before
		}
		if start < cut && keyBody(run) {
			out.WriteString(s.emit(start))
			out.WriteString(Label("private-key") + "\n")
			s.ctx, s.inKey = "", true
			s.pending = append(s.pending[:0], s.pending[cut:]...)
			return out.String() + s.release(m, now)
		}
	}
	if m != modeFlush && !expired && cut > 0 {
		cut = s.holdBase64Run(cut)
	}
	if cut > 0 {
		out.WriteString(s.emit(cut))
		if s.swallow || s.inKey {
			return out.String() + s.release(m, now)
		}
	}
	// What is left is a held run of base64 lines (held bytes) and the
	// unterminated last line.
	held := lastBreak(s.pending)
	line := string(s.pending[held:])
	switch {
	case len(s.pending) == 0:
	case m == modeFlush:
		out.WriteString(s.emit(len(s.pending)))
	case len(line) > MaxHold:
		start := tokenStart(s.ctx, line)
		if start == 0 || len(line)-start > MaxHold {
			start = len(line)
		}
		out.WriteString(s.emit(held + start))
	case m == modeIdle && held > 0 && !expired:
		// Nothing of the line can go before the run it follows.
	case m == modeIdle:
		start := tokenStart(s.ctx, line)
		head, tok := line[:start], line[start:]
		if id, at, ok := suspicious(s.ctx+string(s.pending[:held])+head, tok); ok {
			out.WriteString(s.emit(held + start))
			out.WriteString(tok[:at] + Label(id))
			// The context keeps the token itself, never released, so the
			// rest of the line is judged as if it had not been cut.
			s.ctx += tok
			s.pending = s.pending[:0]
			s.swallow = !endsToken(tok)
			if q := tok[0]; (q == '"' || q == '\'') && strings.Count(tok, string(q)) == 1 {
				s.quote = q // a quoted value goes on to its closing quote
				s.swallow = true
			}
			if id == "private-key" {
				s.inKey = true
			}
			break
		}
		if expired {
			start = len(line)
		}
		out.WriteString(s.emit(held + start))
	}
	return out.String()
}

// emit releases pending[:n], redacted in the context of the line released
// before it and of what follows it (so that nothing of a secret that
// continues past n is released).
func (s *Stream) emit(n int) string {
	text := s.ctx + string(s.pending)
	off, end := len(s.ctx), len(s.ctx)+n
	sp := find(text, Latest, true, false)
	var clipped []span
	for _, x := range sp {
		if x.hi <= off || x.lo >= end {
			continue
		}
		if x.hi > end && x.id != "private-key" && n < len(s.pending) {
			// The secret goes on past the cut: release up to its start.
			if x.lo > off {
				end = x.lo
			} else {
				end = off
			}
			break
		}
		if x.id == "private-key" && (x.hi >= end || strings.TrimSpace(text[x.hi:end]) == "") && !keyEnd.MatchString(text[x.lo:min(x.hi, end)]) {
			// The rest of the key is dropped as it comes (dropKey).
			s.inKey = true
		}
		x.lo, x.hi = max(x.lo, off)-off, min(x.hi, end)-off
		clipped = append(clipped, x)
	}
	region := text[off:end]
	out := apply(region, clipped)
	if strings.HasSuffix(region, "\n") && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	released := text[:end]
	if i := strings.LastIndexAny(released, "\n\r"); i >= 0 {
		released = released[i+1:]
	}
	if len(released) > maxContext {
		released = released[len(released)-maxContext:]
	}
	s.ctx = released
	s.pending = append(s.pending[:0], text[end:]...)
	return out
}

// dropToken drops the rest of a token whose start was redacted; it
// reports whether the token ended (swallow is then off).
func (s *Stream) dropToken() bool {
	// The dropped bytes stay in the context (never released), so the rest
	// of the line is judged as if it had not been cut.
	for i, c := range s.pending {
		end := c == '\n' || c == '\r'
		if s.quote != 0 {
			end = end || c == s.quote
		} else {
			end = end || c == ' ' || c == '\t' || c == '"' || c == '\''
		}
		if end {
			s.quote = 0
			s.ctx += string(s.pending[:i])
			s.pending = append(s.pending[:0], s.pending[i:]...)
			s.swallow = false
			return true
		}
	}
	s.ctx += string(s.pending)
	if len(s.ctx) > maxContext {
		s.ctx = s.ctx[len(s.ctx)-maxContext:]
	}
	s.pending = s.pending[:0]
	return false
}

// dropKey drops the lines of an open private key: base64, PEM headers and
// blank lines, through its END line. It reports whether the key ended
// (inKey is then off). With all, an unterminated last line that looks like
// key material is dropped too.
func (s *Stream) dropKey(all bool) bool {
	for len(s.pending) > 0 {
		i := strings.IndexByte(string(s.pending), '\n')
		line := string(s.pending)
		if i >= 0 {
			line = line[:i]
		}
		if loc := keyEnd.FindStringIndex(line); loc != nil {
			// The label already ended with the BEGIN line's break: the END
			// line's break goes with the key.
			rest := strings.TrimPrefix(strings.TrimPrefix(string(s.pending[loc[1]:]), "\r"), "\n")
			s.pending = append(s.pending[:0], rest...)
			s.inKey = false
			return true
		}
		if !pemHeader.MatchString(line) {
			s.inKey = false
			return true
		}
		if i < 0 {
			if all || len(s.pending) > MaxHold {
				s.pending = s.pending[:0]
			}
			return false
		}
		s.pending = append(s.pending[:0], s.pending[i+1:]...)
	}
	return false
}

// holdBase64Run moves cut (after a line break) back to the start of the
// run of base64 lines that ends there, unless the run is longer than
// MaxKeyHold: the END line of a private key may follow it.
func (s *Stream) holdBase64Run(cut int) int {
	text := string(s.pending[:cut])
	start := cut
	for start > 0 {
		prev := strings.LastIndexByte(text[:start-1], '\n') + 1
		if !base64Ln.MatchString(strings.TrimSuffix(text[prev:start], "\n")) {
			break
		}
		start = prev
	}
	if cut-start > MaxKeyHold {
		return cut
	}
	return start
}

// keyBody reports whether lines look like the body of a PEM key: every
// full line 64 (PEM) or 70 (OpenSSH) characters wide, random-looking.
func keyBody(lines string) bool {
	for _, l := range strings.Split(strings.TrimRight(lines, "\r\n"), "\n") {
		l = strings.TrimSpace(l)
		if (len(l) != 64 && len(l) != 70) || !looksRandom(l) {
			return false
		}
	}
	return true
}

// lastBreak returns the index after the last line break of p (0: none).
func lastBreak(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '\n' || p[i] == '\r' {
			return i + 1
		}
	}
	return 0
}

// tokenStart returns where the last token of line starts: after its last
// blank, or at an unclosed quote of the line (a quoted value may hold
// blanks).
func tokenStart(ctx, line string) int {
	start := strings.LastIndexAny(line, " \t") + 1
	full := ctx + line[:start]
	for _, q := range []string{`"`, `'`} {
		if strings.Count(full, q)%2 == 1 {
			// The quote may be in the part of the line released before.
			start = max(strings.LastIndex(line[:start], q), 0)
		}
	}
	return start
}

// endsToken reports whether tok ends with what ends a token.
func endsToken(tok string) bool {
	return tok != "" && strings.ContainsRune(" \t\"'", rune(tok[len(tok)-1]))
}

// suspicious reports whether tok, the last token of a line after prefix,
// is or could be the start of a secret, by which rule, and where in tok
// the secret starts (what comes before it, a key name or a flag, is not
// secret).
func suspicious(prefix, tok string) (id string, at int, ok bool) {
	if tok == "" {
		return "", 0, false
	}
	lo, hi := len(prefix), len(prefix)+len(tok)
	overlaps := func(sp []span) (string, int, bool) {
		for _, x := range sp {
			if x.lo < hi && x.hi > lo {
				return x.id, max(x.lo, lo) - lo, true
			}
		}
		return "", 0, false
	}
	if id, at, ok := overlaps(find(prefix+tok, Latest, true, false)); ok {
		return id, at, true
	}
	for _, p := range probes {
		switch line := prefix[strings.LastIndexAny(prefix, "\n\r")+1:] + tok; {
		case strings.Count(line, `"`)%2 == 1:
			p += `"` // close a quoted value
		case strings.Count(line, "'")%2 == 1:
			p += "'"
		}
		var sp []span
		text := prefix + tok + p
		for _, x := range find(text, Latest, false, false) {
			if x.rule != nil && x.rule.noProbe {
				continue
			}
			if r := x.rule; r != nil && r.glued != nil && x.lo > 0 && wordByte(text[x.lo-1]) && !r.glued(text[x.lo:max(x.lo, min(x.hi, hi))]) {
				// A prefix inside a word (task-, disk_test_): what the
				// token holds of the body, not the probe's, must look
				// random.
				continue
			}
			sp = append(sp, x)
		}
		if id, at, ok := overlaps(sp); ok {
			return id, at, true
		}
	}
	if id, ok := knownPrefix(prefix + tok); ok {
		return id, 0, true
	}
	if len(tok) >= 12 && looksLikeKeyStart(tok) {
		return "partial-secret", 0, true
	}
	return "", 0, false
}

// looksLikeKeyStart reports whether tok could begin a random secret: only
// key characters, upper and lower case letters and digits (not a hash).
func looksLikeKeyStart(tok string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		case !secretByte(c) && c != '.' && c != '=':
			return false
		}
	}
	return upper && lower && digit && !base64Text(tok[:len(tok)/4*4])
}
