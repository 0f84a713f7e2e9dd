package redact

import (
	"os"
	"sort"
	"strings"
	"sync"
)

// secretName matches the names of environment variables (and settings)
// whose values are secrets: DB_PASSWORD, GITHUB_TOKEN, MYSQL_PWD,
// AWS_SECRET_ACCESS_KEY… PWD and OLDPWD (the working
// directory) are not.
var secretName = lazy(`(?i)(?:` + secretKeys + `|passphrase|credential|_pwd$|_pass$|_pw$)`)

// MinKnownLen is the shortest value Remember keeps: shorter ones would
// redact ordinary words.
const MinKnownLen = 6

// known holds the exact values of secrets this process knows, longest
// first, each with its label.
var known struct {
	once sync.Once
	mu   sync.RWMutex
	vals []knownValue
}

type knownValue struct{ value, id string }

// SecretName reports whether an environment variable or setting called
// name holds a secret by its name.
func SecretName(name string) bool {
	if name == "PWD" || name == "OLDPWD" {
		return false
	}
	return secretName.MatchString(name)
}

// Remember adds value, the secret called name (an environment variable, a
// setting), to the values Redact replaces wherever they occur, as
// [REDACTED:known:<name>]. Values shorter than MinKnownLen, shorter than
// 12 bytes with a single kind of character (a word: "postgres"), numbers,
// paths and variable references are ignored. Safe for concurrent use.
func Remember(name, value string) {
	initKnown()
	remember(name, value)
}

func remember(name, value string) {
	value = strings.TrimSpace(value)
	if len(value) < MinKnownLen || harmless(value) || strings.ContainsAny(value, "\n") || strings.HasPrefix(value, "/") {
		return
	}
	if len(value) < 12 && classes(value) < 2 {
		// "postgres", "changeme": a weak password that is also a word would
		// redact every mention of the word and refuse every plan naming it.
		return
	}
	id := "known:" + sanitizeName(name)
	known.mu.Lock()
	defer known.mu.Unlock()
	for _, k := range known.vals {
		if k.value == value {
			return
		}
	}
	known.vals = append(known.vals, knownValue{value: value, id: id})
	sort.SliceStable(known.vals, func(i, j int) bool { return len(known.vals[i].value) > len(known.vals[j].value) })
}

// classes counts the kinds of character in v: lower case, upper case,
// digits, others.
func classes(v string) int {
	var k [4]bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z':
			k[0] = true
		case c >= 'A' && c <= 'Z':
			k[1] = true
		case c >= '0' && c <= '9':
			k[2] = true
		default:
			k[3] = true
		}
	}
	n := 0
	for _, b := range k {
		if b {
			n++
		}
	}
	return n
}

// RememberEnv remembers the values of the variables of environ (KEY=value
// entries, as os.Environ gives) whose names look secret (SecretName). The
// process's own environment is remembered at the first use of the
// package's functions.
func RememberEnv(environ []string) {
	initKnown()
	rememberEnv(environ)
}

func rememberEnv(environ []string) {
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && SecretName(k) {
			remember(k, v)
		}
	}
}

func initKnown() { known.once.Do(func() { rememberEnv(os.Environ()) }) }

// sanitizeName keeps a name usable inside a label.
func sanitizeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "value"
	}
	return string(b)
}

// knownSpans finds the known values in s.
func knownSpans(s string, first bool) []span {
	initKnown()
	known.mu.RLock()
	defer known.mu.RUnlock()
	var out []span
	for _, k := range known.vals {
		for off := 0; ; {
			i := strings.Index(s[off:], k.value)
			if i < 0 {
				break
			}
			lo := off + i
			out = append(out, span{lo: lo, hi: lo + len(k.value), id: k.id})
			if first {
				return out
			}
			off = lo + len(k.value)
		}
	}
	return out
}

// knownPrefix returns the label of a known value that s ends with a
// prefix of (at least MinKnownLen/2 bytes), for the stream redactor: the
// rest may follow in the next chunk.
func knownPrefix(s string) (string, bool) {
	initKnown()
	known.mu.RLock()
	defer known.mu.RUnlock()
	for _, k := range known.vals {
		for n := min(len(k.value)-1, len(s)); n >= MinKnownLen/2; n-- {
			if strings.HasSuffix(s, k.value[:n]) {
				return k.id, true
			}
		}
	}
	return "", false
}
