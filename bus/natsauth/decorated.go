package natsauth

import (
	"bytes"
	"errors"

	"github.com/nats-io/nkeys"
)

// parseDecorated is jwt.ParseDecoratedJWT and jwt.ParseDecoratedNKey of
// b, giving the same results. Those two find a creds file's blocks with a
// regular expression (nats-io/jwt creds_utils.go, userConfigRE:
// `\s*(?:(?:[-]{3,}.*[-]{3,}\r?\n)([\w\-.=]+)(?:\r?\n[-]{3,}.*[-]{3,}(\r?\n|\z)))`)
// over the whole file, each of them: ~1.5 ms apiece for an agentic creds
// file, whose NATS user JWT is a long line and whose credential and keys
// follow, most of every agentctl invocation's parsing. decoratedBlocks
// finds the same first two blocks with a scan of the lines, which
// TestParseDecoratedIsTheLibrarys and FuzzParseDecorated hold to the
// library's results.
func parseDecorated(b []byte) (user string, key nkeys.KeyPair, keyErr error) {
	items := decoratedBlocks(b, 2)
	if len(items) == 0 {
		user = string(b)
	} else {
		user = string(bytes.Clone(items[0]))
	}
	var seed []byte
	if len(items) > 1 {
		seed = items[1]
	} else {
		for _, line := range bytes.Split(b, []byte("\n")) {
			t := bytes.TrimSpace(line)
			if bytes.HasPrefix(t, []byte("SO")) || bytes.HasPrefix(t, []byte("SA")) || bytes.HasPrefix(t, []byte("SU")) {
				seed = line
				break
			}
		}
	}
	if seed == nil {
		return user, nil, errors.New("no nkey seed found")
	}
	if !bytes.HasPrefix(seed, []byte("SO")) && !bytes.HasPrefix(seed, []byte("SA")) && !bytes.HasPrefix(seed, []byte("SU")) {
		return user, nil, errors.New("doesn't contain a seed nkey")
	}
	key, keyErr = nkeys.FromSeed(seed)
	return user, key, keyErr
}

// decoratedBlocks returns the submatch of the first n matches of
// userConfigRE in b (what FindAllSubmatch(b, n) gives as item[1]), found
// line by line. A match is three lines: a line holding a run of at least
// three dashes, then anything, then at least three dashes at its end
// (before an optional \r), the run starting anywhere in the line (the
// pattern's leading \s* and its `.` let it); then a line of token bytes
// ([\w\-.=], one or more, an optional \r after): the submatch; then a
// line that starts with three dashes and ends with three (an optional \r
// after, then \n or the end of b). The leftmost match is the one whose
// first line comes first, and the next search starts after the third
// line.
func decoratedBlocks(b []byte, n int) [][]byte {
	var out [][]byte
	for at := 0; at < len(b) && len(out) < n; {
		l1, next, ok := line(b, at)
		if !ok { // the first line needs its \n
			break
		}
		if dashLine(l1, true) {
			if l2, after2, ok := line(b, next); ok {
				if tok := bytes.TrimSuffix(l2, []byte("\r")); len(tok) > 0 && tokenBytes(tok) {
					l3, after3, nl := line(b, after2)
					if !nl {
						l3 = b[after2:]
					}
					if after2 <= len(b) && dashLine3(l3, nl) {
						out = append(out, tok)
						at = after3
						if !nl {
							at = len(b)
						}
						continue
					}
				}
			}
		}
		at = next
	}
	return out
}

// line returns the line of b starting at at, without its \n, and where
// the next starts; ok is false when no \n ends it.
func line(b []byte, at int) (l []byte, next int, ok bool) {
	if at > len(b) {
		return nil, len(b), false
	}
	i := bytes.IndexByte(b[at:], '\n')
	if i < 0 {
		return b[at:], len(b), false
	}
	return b[at : at+i], at + i + 1, true
}

// dashLine reports whether some position of l starts `[-]{3,}.*[-]{3,}\r?`
// to its end: l (less one \r at its end) ends with three dashes and
// holds three dashes that end at least three bytes before that.
func dashLine(l []byte, _ bool) bool {
	v := bytes.TrimSuffix(l, []byte("\r"))
	i := bytes.Index(v, []byte("---"))
	return i >= 0 && i+6 <= len(v) && bytes.HasSuffix(v, []byte("---"))
}

// dashLine3 is the third line's test: `[-]{3,}.*[-]{3,}` from its start,
// then \r?\n (nl: the line ends with \n) or the end of the input.
func dashLine3(l []byte, nl bool) bool {
	v := l
	if nl {
		v = bytes.TrimSuffix(l, []byte("\r"))
	}
	return len(v) >= 6 && bytes.HasPrefix(v, []byte("---")) && bytes.HasSuffix(v, []byte("---"))
}

// tokenBytes reports whether every byte of t is in [\w\-.=].
func tokenBytes(t []byte) bool {
	for _, c := range t {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-', c == '.', c == '=':
		default:
			return false
		}
	}
	return true
}
