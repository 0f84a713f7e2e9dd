// Package redact finds and hides secrets in text: command lines, step
// output, event payloads. Executors redact output before it leaves the
// node, and the envelope refuses to sign or accept an event that still
// carries a secret (DESIGN.md: secrets are redacted when an event is
// created; an event that still carries a known secret pattern is refused).
//
// It is a pattern filter, not a guarantee: a secret in an unknown format
// passes through. Values that are plainly not secrets — a shell variable
// reference ($DB_PASSWORD, ${TOKEN}) or a number (max_tokens: 500) — are
// left alone, so a plan may name a secret without carrying it.
package redact

import (
	"regexp"
	"strings"
)

// Redacted replaces every secret Redact finds.
const Redacted = "[REDACTED]"

// rule is one secret pattern. groups are the submatches that may hold the
// secret, the first that matched is replaced (none: the whole match). hints
// (lowercase, matched against the lowercased text) and exact (matched as
// they are) are substrings of which at least one must occur for the pattern
// to possibly match: a cheap pre-filter that keeps redaction of large
// outputs fast.
type rule struct {
	name   string
	re     *regexp.Regexp
	groups []int
	hints  []string
	exact  []string
}

// secretKeys are the key names whose values are secret in key=value and
// key: value forms; any key containing one of them counts (DB_PASSWORD,
// client_secret, X-Api-Key, GITHUB_TOKEN…).
const secretKeys = `password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key`

// set1 are the patterns of secret-pattern set 1.
var set1 = []rule{
	{
		name:  "private key block",
		re:    regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),
		exact: []string{"PRIVATE KEY-----"},
	},
	{
		name:   "authorization header",
		re:     regexp.MustCompile(`(?i)(authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token|bot)[ \t]+)([^\s"',;]+)`),
		groups: []int{2},
		hints:  []string{"authorization"},
	},
	{
		name:   "bearer token",
		re:     regexp.MustCompile(`(?i)(\bbearer[ \t]+)([A-Za-z0-9\-._~+/]{8,}=*)`),
		groups: []int{2},
		hints:  []string{"bearer"},
	},
	{
		name:   "key=value secret",
		re:     regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(?:` + secretKeys + `)[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*)(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'&,;]+))`),
		groups: []int{2, 3, 4},
		hints:  []string{"pass", "secret", "token", "key"},
	},
	{
		name:   "secret flag",
		re:     regexp.MustCompile(`(?i)(--(?:` + secretKeys + `)[ \t]+)([^\s-][^\s]*)`),
		groups: []int{2},
		hints:  []string{"--pass", "--secret", "--token", "--api", "--access", "--private"},
	},
	{
		name:  "AWS access key id",
		re:    regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		exact: []string{"AKIA", "ASIA"},
	},
	{
		name:  "GitHub token",
		re:    regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`),
		exact: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
	},
	{
		name:  "OpenAI-style key",
		re:    regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`),
		exact: []string{"sk-"},
	},
	{
		name:  "Slack token",
		re:    regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
		exact: []string{"xox"},
	},
	{
		name:   "URL credentials",
		re:     regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)`),
		groups: []int{2},
		hints:  []string{"://"},
	},
}

// Set is a versioned set of secret patterns: the set a protocol version
// judges event payloads by (bus/envelope's rules table), so that a
// receiver checks an event with the patterns its signer was bound by, and
// history keeps verifying when patterns are added. Sets only grow: set n+1
// holds every pattern of set n and adds its own, so a payload a newer set
// passes, every older set passes too. A pattern that must change (a false
// positive) cannot: the new form joins a later set and the old one stays.
type Set int

const (
	// Set1 is the first set: the patterns listed at Redact.
	Set1 Set = 1
	// Latest is the newest set this build knows. Redact, Find and FindJSON
	// use it.
	Latest = Set1
)

// added[n] holds the patterns set n adds to set n-1.
var added = [][]rule{Set1: set1}

// sets[n] holds every pattern of set n, in the order they are tried.
var sets = func() [][]rule {
	out := make([][]rule, len(added))
	for n := 1; n < len(added); n++ {
		out[n] = append(append([]rule(nil), out[n-1]...), added[n]...)
	}
	return out
}()

// Known reports whether s is a set this build has.
func (s Set) Known() bool { return s >= 1 && int(s) < len(sets) }

// rules returns the patterns of s; a set this build does not have is
// judged by Latest.
func (s Set) rules() []rule {
	if !s.Known() {
		return sets[Latest]
	}
	return sets[s]
}

// Redact returns s with every secret-looking value replaced by Redacted:
//
//   - values of keys containing password, passwd, secret, token, api_key,
//     apikey, access_key or private_key, as key=value or key: value
//     (case-insensitive, quoted values included), and --password VALUE flags;
//   - Authorization headers (Bearer, Basic, token) and bare "Bearer X";
//   - AWS access key ids (AKIA…/ASIA… + 16), GitHub tokens (ghp_…, gho_…,
//     github_pat_…), OpenAI-style keys (sk-…), Slack tokens (xox?-…);
//   - PEM "-----BEGIN … PRIVATE KEY-----" blocks, through the END line or to
//     the end of s when the block is not terminated;
//   - the password of URLs with user:password@.
//
// The key name, header name and URL user stay visible so an operator can
// tell what was hidden. Redact is idempotent and ContainsSecret(Redact(s))
// is false. It is a pattern filter, not a guarantee: a secret in an unknown
// format passes through.
func Redact(s string) string {
	if s == "" {
		return s
	}
	lower := strings.ToLower(s)
	rules := Latest.rules()
	for i := range rules {
		r := &rules[i]
		if !r.hinted(s, lower) {
			continue
		}
		if out, changed := r.replace(s); changed {
			s = out
			lower = strings.ToLower(s)
		}
	}
	return s
}

// ContainsSecret reports whether s holds a value Redact would replace.
// Events that still carry one are refused (DESIGN.md "Secrets").
func ContainsSecret(s string) bool {
	_, ok := Find(s)
	return ok
}

// Find reports the kind of the first secret in s ("key=value secret",
// "GitHub token", …), without the secret itself, by the Latest set.
func Find(s string) (kind string, ok bool) { return Latest.Find(s) }

// Find reports the kind of the first secret in text by the patterns of set.
func (set Set) Find(s string) (kind string, ok bool) {
	if s == "" {
		return "", false
	}
	lower := strings.ToLower(s)
	rules := set.rules()
	for i := range rules {
		r := &rules[i]
		if !r.hinted(s, lower) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if lo, hi := r.secret(m); lo >= 0 && hi > lo && !harmless(s[lo:hi]) {
				return r.name, true
			}
		}
	}
	return "", false
}

// varRef matches a value that only names a variable: $NAME or ${NAME}
// (possibly with a :- default that is itself a reference), escaped quotes
// of a JSON string around it included.
var varRef = regexp.MustCompile(`^\\?["']?\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})\\?["']?$`)

// harmless reports whether a matched value is not a secret: already
// redacted, a variable reference, or a number.
func harmless(v string) bool {
	if v == Redacted || varRef.MatchString(v) {
		return true
	}
	// Unquoted values run to the next separator, which in JSON can be a
	// closing brace or bracket.
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

func (r *rule) hinted(s, lower string) bool {
	for _, h := range r.exact {
		if strings.Contains(s, h) {
			return true
		}
	}
	for _, h := range r.hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// secret returns the bounds of the secret in match m; lo is -1 when none of
// the rule's groups took part in the match.
func (r *rule) secret(m []int) (lo, hi int) {
	if len(r.groups) == 0 {
		return m[0], m[1]
	}
	for _, g := range r.groups {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1]
		}
	}
	return -1, -1
}

// replace substitutes Redacted for the secret group of every match.
func (r *rule) replace(s string) (string, bool) {
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if len(ms) == 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	last, changed := 0, false
	for _, m := range ms {
		lo, hi := r.secret(m)
		if lo < 0 || hi == lo || harmless(s[lo:hi]) {
			continue
		}
		b.WriteString(s[last:lo])
		b.WriteString(Redacted)
		last, changed = hi, true
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}
