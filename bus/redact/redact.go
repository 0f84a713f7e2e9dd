package redact

import (
	"slices"
	"sort"
	"strings"
)

// Redacted is the replacement of the first set's redactions, without a
// rule; it is still recognised as harmless.
const Redacted = "[REDACTED]"

// Label is the replacement of a secret found by rule: [REDACTED:<rule>].
func Label(rule string) string { return "[REDACTED:" + rule + "]" }

// Set is a versioned set of secret patterns: the set a protocol version
// judges event payloads by (bus/envelope's rules table), so that a
// receiver checks an event with the patterns its signer was bound by, and
// history keeps verifying when patterns are added. A released set never
// changes. Sets 1 and 2 only grow: set 2 holds every pattern of set 1.
// Set 3 replaces some patterns of set 2 by forms of its own (set3Replaces:
// tokens glued to text, names that merely contain a secret word), so a
// payload set 3 passes may fail set 2: a signer that signs by an older
// version checks by that version's set too (bus/envelope CheckDraft).
type Set int

const (
	// Set1 is the first set: private key blocks, Authorization and bearer
	// tokens, key=value secrets, --password flags, AWS access key ids,
	// GitHub, OpenAI-style and Slack tokens, URL credentials.
	Set1 Set = 1
	// Set2 adds provider tokens (Stripe, Google, GitLab, npm, PyPI, Docker
	// Hub, Vault…), JWTs, private key bodies without their BEGIN line, more
	// secret names (MYSQL_PWD, *_PASS, passphrase…), the password flags of
	// common tools, "password <value>" prose and random-looking values.
	Set2 Set = 2
	// Set3 finds provider tokens wherever they start (glued to letters,
	// digits or "_": abcghp_…), and judges a name that merely contains a
	// secret word (MY_TOKEN_PART, private_key_path) by its value; it
	// replaces the set-2 rules it narrows or widens (set3Replaces).
	Set3 Set = 3
	// Latest is the newest set this build knows. Redact, Find and FindJSON
	// use it, and so does redaction when an event or output is created.
	Latest = Set3
)

// added[n] holds the patterns set n adds to set n-1; replaces[n] names the
// patterns of set n-1 that set n leaves out (a form of its own in added[n]
// takes their place).
var (
	added    = [][]rule{Set1: set1, Set2: set2, Set3: set3}
	replaces = [][]string{Set3: set3Replaces}
)

// sets[n] holds every pattern of set n, in the order they are tried: those
// of set n-1, each one set n replaces swapped in place for set n's rules
// of the same name, then the rest of set n's.
var sets = func() [][]rule {
	out := make([][]rule, len(added))
	for n := 1; n < len(added); n++ {
		var repl []string
		if n < len(replaces) {
			repl = replaces[n]
		}
		var rules []rule
		done := map[string]bool{}
		for _, r := range out[n-1] {
			if !slices.Contains(repl, r.name) {
				rules = append(rules, r)
				continue
			}
			if !done[r.name] {
				done[r.name] = true
				for _, a := range added[n] {
					if a.name == r.name {
						rules = append(rules, a)
					}
				}
			}
		}
		for _, a := range added[n] {
			if !done[a.name] {
				rules = append(rules, a)
			}
		}
		out[n] = rules
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

// span is a secret found in a text: [lo, hi) and the rule that found it.
type span struct {
	lo, hi int
	rule   *rule
	id     string
}

// Redact returns s with every secret replaced by its Label: the patterns
// of the Latest set and the values this process knows (Remember). It is
// idempotent and ContainsSecret(Redact(s)) is false.
func Redact(s string) string {
	if s == "" {
		return s
	}
	return apply(s, find(s, Latest, true, false))
}

// ContainsSecret reports whether s holds a value Redact would replace.
func ContainsSecret(s string) bool {
	_, ok := Find(s)
	return ok
}

// Find reports the kind of the first secret in s ("key=value secret",
// "GitHub token", "known:DB_PASSWORD"…), without the secret itself, by the
// Latest set and the values this process knows.
func Find(s string) (kind string, ok bool) {
	sp := find(s, Latest, true, true)
	if len(sp) == 0 {
		return "", false
	}
	return sp[0].kind(), true
}

// Find reports the kind of the first secret in s by the patterns of set
// alone (no known values): how a receiver judges a payload.
func (set Set) Find(s string) (kind string, ok bool) {
	sp := find(s, set, false, true)
	if len(sp) == 0 {
		return "", false
	}
	return sp[0].kind(), true
}

func (sp span) kind() string {
	if sp.rule != nil {
		return sp.rule.name
	}
	return sp.id
}

// find returns the secrets in s, sorted by start and merged where they
// overlap. With first it stops at the first rule that finds any.
func find(s string, set Set, withKnown, first bool) []span {
	if s == "" {
		return nil
	}
	var out []span
	rules := set.rules()
	ts := set.index().rulesFor(s, rules)
	var buf [8][2]int
	for _, i := range ts.rules {
		r := &rules[i]
		if r.runs != nil {
			// A rule by runs has no hints: it looks at the whole text, and
			// judges whole runs only.
			if ts.longest < r.runs.min {
				continue
			}
			for _, m := range r.runs.appendMatches(buf[:0], s) {
				if !r.accepts(s, m[0], m[1], m[0], m[1]) {
					continue
				}
				out = append(out, span{lo: m[0], hi: m[1], rule: r, id: r.id})
				if first {
					return out
				}
			}
			continue
		}
		for _, m := range r.matchesIn(s, ts.where[i]) {
			lo, hi := r.secret(m)
			if !r.accepts(s, lo, hi, m[0], m[1]) || r.judge != nil && !r.judge(s, m) {
				continue
			}
			out = append(out, span{lo: lo, hi: hi, rule: r, id: r.id})
			if first {
				return out
			}
		}
	}
	if withKnown {
		out = append(out, knownSpans(s, first && len(out) == 0)...)
	}
	return merge(out)
}

// accepts reports whether the secret s[lo:hi] of the match s[mlo:mhi]
// is one: not harmless, and valid and checked where the rule says so.
func (r *rule) accepts(s string, lo, hi, mlo, mhi int) bool {
	if lo < 0 || hi <= lo || harmless(s[lo:hi]) {
		return false
	}
	if r.valid != nil && !r.valid(s[lo:hi]) {
		return false
	}
	if r.glued != nil && lo > 0 && wordByte(s[lo-1]) && !r.glued(s[lo:hi]) {
		return false
	}
	return r.check == nil || r.check(s[mlo:mhi])
}

// merge sorts spans by start and joins overlapping ones; a joined span
// keeps the label of the one that starts first.
func merge(sp []span) []span {
	if len(sp) < 2 {
		return sp
	}
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].lo < sp[j].lo })
	out := sp[:1]
	for _, x := range sp[1:] {
		last := &out[len(out)-1]
		if x.lo < last.hi {
			last.hi = max(last.hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// apply replaces the spans of s by their labels.
func apply(s string, sp []span) string {
	if len(sp) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, x := range sp {
		b.WriteString(s[last:x.lo])
		b.WriteString(Label(x.id))
		last = x.hi
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchesIn returns the rule's submatch indexes in the ranges of s (whole:
// all of it), as indexes of s.
func (r *rule) matchesIn(s string, ranges [][2]int) [][]int {
	if len(ranges) == 1 && ranges[0][1] < 0 {
		return r.matches(s)
	}
	var out [][]int
	for _, rg := range ranges {
		for _, m := range r.matches(s[rg[0]:rg[1]]) {
			for j := range m {
				if m[j] >= 0 {
					m[j] += rg[0]
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// matches returns the rule's submatch indexes in s.
func (r *rule) matches(s string) [][]int { return r.re.FindAllStringSubmatchIndex(s, -1) }

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
