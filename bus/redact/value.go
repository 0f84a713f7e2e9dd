package redact

import (
	"encoding/base64"
	"math"
	"strings"
)

// varRef matches a value that only names a variable: $NAME or ${NAME}
// (possibly with a :- default that is itself a reference), escaped quotes
// of a JSON string around it included.
var varRef = lazy(`^\\?["']?\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})\\?["']?$`)

// label matches the replacement of an earlier redaction.
var label = lazy(`^\[REDACTED(?::[A-Za-z0-9_.:-]+)?\]$`)

// harmless reports whether a matched value is not a secret: already
// redacted, a variable reference, or a number.
func harmless(v string) bool {
	if label.MatchString(v) || varRef.MatchString(v) {
		return true
	}
	// Unquoted values run to the next separator, which in JSON can be a
	// closing brace or bracket.
	if t := strings.TrimRight(v, "})"); t != v && label.MatchString(t) {
		return true
	}
	v = strings.TrimRight(v, "})]")
	if v == "" {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// notFlag rejects a flag's "value" that is the next flag (mongosh -p
// --host: -p prompts).
func notFlag(v string) bool { return !strings.HasPrefix(v, "-") }

// negated matches a --no-… flag.
var negated = lazy(`^\s--?no-`)

// notNegated rejects --no-password and the like, which take no value.
func notNegated(m string) bool { return !negated.MatchString(m) }

// passwordLike reports whether the word after "password" in prose looks
// like one: letters with a digit or a symbol, not a plain word.
func passwordLike(v string) bool {
	v = strings.TrimRight(v, ".,;:)!?")
	if len(v) < 4 {
		return false
	}
	var letter, digit, symbol bool
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
			digit = true
		case strings.ContainsRune("!@#$%^&*+=?~", c):
			symbol = true
		}
	}
	return letter && (digit || symbol)
}

// secretByte reports whether c may be part of a random-looking secret
// (base64, base64url).
func secretByte(c byte) bool { return secretBytes[c] }

var secretBytes = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
	}
	return t
}()

// runRule finds runs of secretByte (with "=" padding) of min to max
// characters. With assign, a run counts only as the value of an
// assignment NAME=run, NAME: run (quotes allowed); without, only bounded
// by characters that cannot continue it.
type runRule struct {
	min, max int
	assign   bool
}

// appendMatches appends the bounds of the rule's runs in s to out. Every
// run it judges is a whole run of secretByte: in a text whose longest run
// is shorter than min it finds none.
func (rr *runRule) appendMatches(out [][2]int, s string) [][2]int {
	for i := 0; i < len(s); {
		if !secretBytes[s[i]] {
			i++
			continue
		}
		j := i
		for j < len(s) && secretBytes[s[j]] {
			j++
		}
		end := j
		for end < len(s) && s[end] == '=' && end-j < 2 {
			end++
		}
		n := j - i
		ok := n >= rr.min && n <= rr.max && (end == len(s) || !secretBytes[s[end]] && s[end] != '=')
		if ok && rr.assign {
			ok = assignedAt(s, i)
		} else if ok {
			ok = i == 0 || s[i-1] != '.'
		}
		if ok {
			out = append(out, [2]int{i, j})
		}
		i = end
	}
	return out
}

// assignedAt reports whether the value starting at i follows NAME= or
// NAME: (spaces and one quote allowed between).
func assignedAt(s string, i int) bool {
	k := i - 1
	if k >= 0 && (s[k] == '"' || s[k] == '\'') {
		k--
	}
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') {
		k--
	}
	if k < 0 || (s[k] != '=' && s[k] != ':') {
		return false
	}
	k--
	if k >= 0 && (s[k] == '"' || s[k] == '\'') {
		k--
	}
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') && s[k+1] == ':' {
		k--
	}
	if k < 0 || !nameByte(s[k]) {
		return false
	}
	end := k + 1
	for k >= 0 && nameByte(s[k]) {
		k--
	}
	return !digestName(strings.ToLower(s[k+1 : end]))
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// digestName reports whether an assignment's name says its value is a
// digest (go.sum's h1:, npm's integrity, an ETag), not a secret.
func digestName(name string) bool {
	for _, d := range []string{"h1", "sum", "hash", "digest", "checksum", "integrity", "etag", "sha1", "sha256", "sha384", "sha512", "md5", "fingerprint", "commit", "revision"} {
		if name == d || strings.HasSuffix(name, "_"+d) || strings.HasSuffix(name, "-"+d) || strings.HasSuffix(name, "."+d) {
			return true
		}
	}
	return false
}

// looksRandom reports whether v looks like a random secret rather than a
// word, an identifier, a path, a hash or base64 of text: upper and lower
// case letters and digits, mixed (many changes of class), with high
// entropy. Commit hashes and UUIDs (no upper case) are not.
func looksRandom(v string) bool {
	v = strings.TrimRight(v, "=")
	n := len(v)
	if n < 20 || strings.HasPrefix(v, "/") || strings.Contains(v, "//") {
		return false
	}
	for _, p := range []string{"sha1-", "sha256-", "sha384-", "sha512-"} {
		if strings.HasPrefix(v, p) {
			return false // a subresource integrity digest
		}
	}
	var upper, lower, digit, changes int
	prev := -1
	for i := 0; i < n; i++ {
		c := v[i]
		cls := 3
		switch {
		case c >= 'A' && c <= 'Z':
			upper, cls = upper+1, 0
		case c >= 'a' && c <= 'z':
			lower, cls = lower+1, 1
		case c >= '0' && c <= '9':
			digit, cls = digit+1, 2
		}
		if prev >= 0 && cls != prev {
			changes++
		}
		prev = cls
	}
	if upper == 0 || lower == 0 || digit == 0 || changes*3 < n {
		return false
	}
	if entropy(v) < math.Min(4.0, 0.85*math.Log2(float64(n))) {
		return false
	}
	return !base64Text(v)
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// base64Text reports whether v is base64 of printable text (an example's
// "aGVsbG8gd29ybGQ="), which is not a secret unless the text holds a key.
func base64Text(v string) bool {
	v = strings.TrimRight(v, "=")
	if len(v)%4 == 1 {
		v = v[:len(v)-1] // cut in the middle of a quantum: judge the rest
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(v)
		if err != nil || len(b) < 8 {
			continue
		}
		printable := 0
		for _, c := range b {
			if c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' {
				printable++
			}
		}
		if printable*100 >= len(b)*95 {
			return !strings.Contains(string(b), "PRIVATE KEY")
		}
	}
	return false
}

// wordByte reports whether c continues a word as regexp's \b sees it.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// upperAndDigit reports whether v holds an upper-case letter and a digit:
// a random token body, not a word (task-runner-…, disk_test_results).
func upperAndDigit(v string) bool {
	return strings.ContainsFunc(v, func(r rune) bool { return r >= 'A' && r <= 'Z' }) &&
		strings.ContainsFunc(v, func(r rune) bool { return r >= '0' && r <= '9' })
}

// hasUpper reports whether v holds an upper-case letter.
func hasUpper(v string) bool {
	return strings.ContainsFunc(v, func(r rune) bool { return r >= 'A' && r <= 'Z' })
}

// codeConstants are values that, unquoted after a secret's name, are a
// language's constant or type, not a secret: password: str = "",
// token=None.
var codeConstants = map[string]bool{
	"None": true, "null": true, "nil": true, "NULL": true, "true": true, "false": true, "True": true, "False": true,
	"undefined": true, "str": true, "string": true, "String": true, "bytes": true, "SecretStr": true, "Optional": true,
}

// codeCall matches a call, an index or a generic type: load_key(path),
// os.environ[, Optional[str], Map<…>.
var codeCall = lazy(`^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*[(\[<]`)

// codeField matches a field of an object: self.token, cfg.api_key,
// process.env.GITHUB_TOKEN.
var codeField = lazy(`^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$`)

// codeName matches an identifier that names a secret by words joined
// with "_" or a camel hump: private_key, privateKey, api_token.
var codeName = lazy(`^[A-Za-z]*(?:[A-Za-z]_|[a-z][A-Z])[A-Za-z_]*$`)

// unquotedNotCode accepts a match of set 3's name rule unless its value
// is unquoted (group 3) and code (notCode).
func unquotedNotCode(s string, m []int) bool {
	return m[6] < 0 || notCode(s[m[6]:m[7]])
}

// notCode reports whether an unquoted value after a secret's name may be
// the secret, not code that computes or names it: a call or an index, a
// constant or type, a field of an object, another name of the secret
// ({"private_key": private_key}), a comparison (token == x).
func notCode(v string) bool {
	if strings.HasPrefix(v, "=") {
		return false
	}
	t := strings.TrimRight(v, ",;)}]")
	if codeConstants[t] || codeCall.MatchString(t) {
		return false
	}
	if (codeField.MatchString(t) || codeName.MatchString(t)) && secretName.MatchString(t) {
		return false
	}
	return true
}

// hexOrUUID matches a hex id, a UUID or a hex digest.
var hexOrUUID = lazy(`^(?:[0-9a-f]+|[0-9A-F]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// credentialLike reports whether the value of a name that merely contains
// a secret word (MY_TOKEN_PART, secret_name) looks like a credential:
// 10 to 200 bytes of letters, digits, symbols and _-./ (gitleaks' value
// characters and the usual password symbols), letters with digits or
// symbols, an entropy of 3.5 bits
// per byte or more (gitleaks' generic-api-key), and not a hex id, a UUID,
// a path, a URL or base64 of text.
func credentialLike(v string) bool {
	if len(v) < 10 || len(v) > 200 || hexOrUUID.MatchString(v) || !notPath(v) || strings.Contains(v, "://") {
		return false
	}
	var letter, other bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9', strings.IndexByte("!@#$%^&*+=?~", c) >= 0:
			other = true
		case c == '_' || c == '-' || c == '.' || c == '/':
		default:
			return false // words, an ARN or a URN (arn:aws:…), markup
		}
	}
	return letter && other && entropy(v) >= 3.5 && !base64Text(v)
}

// notPath reports whether v is not a file path (a flag's value that names
// the file holding a secret: --private-key ~/.ssh/id_ed25519).
func notPath(v string) bool {
	for _, p := range []string{"/", "~/", "./", "../", "@"} {
		if strings.HasPrefix(v, p) {
			return false
		}
	}
	return true
}
