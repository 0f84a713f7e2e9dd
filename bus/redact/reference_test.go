package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// refScan is scan as it was before the one-pass walker: json.Unmarshal
// into an `any` (data it refuses judged as text), then the tree walked
// with the keys of each object in sorted order. The walker must report
// what it reports, for every input.
func (set Set) refScan(data []byte, withKnown bool) (Finding, bool) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		sp := refFind(string(data), set, withKnown, true)
		if len(sp) == 0 {
			return Finding{}, false
		}
		return Finding{Kind: sp[0].kind(), Rule: sp[0].id}, true
	}
	return set.refFindValue(v, "", withKnown)
}

func (set Set) refFindValue(v any, path string, withKnown bool) (Finding, bool) {
	switch x := v.(type) {
	case string:
		if sp := refFind(x, set, withKnown, true); len(sp) > 0 {
			return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
		}
	case []any:
		for i, e := range x {
			if f, ok := set.refFindValue(e, fmt.Sprintf("%s[%d]", path, i), withKnown); ok {
				return f, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := joinPath(path, k)
			if s, isStr := x[k].(string); isStr {
				if sp := refFind(k+"="+s, set, withKnown, true); len(sp) > 0 {
					return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: p}, true
				}
				continue
			}
			if sp := refFind(k, set, withKnown, true); len(sp) > 0 {
				return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
			}
			if f, ok := set.refFindValue(x[k], p, withKnown); ok {
				return f, true
			}
		}
	}
	return Finding{}, false
}

// refFind is find as it was before runs and hint slots: the reference of
// the differential test of find. It shares the rules' patterns and
// predicates; it keeps the old hint index (a map by first pair) and the
// old scan of random-looking runs.
func refFind(s string, set Set, withKnown, first bool) []span {
	if s == "" {
		return nil
	}
	var out []span
	rules := set.rules()
	where := refIndexes[set.refIndexOf()].rulesFor(s, rules)
	for i := range rules {
		r := &rules[i]
		if where[i] == nil {
			continue
		}
		for _, m := range refMatchesIn(r, s, where[i]) {
			lo, hi := r.secret(m)
			if lo < 0 || hi <= lo || harmless(s[lo:hi]) {
				continue
			}
			if r.valid != nil && !r.valid(s[lo:hi]) {
				continue
			}
			if r.glued != nil && lo > 0 && wordByte(s[lo-1]) && !r.glued(s[lo:hi]) {
				continue
			}
			if r.check != nil && !r.check(s[m[0]:m[1]]) {
				continue
			}
			if r.judge != nil && !r.judge(s, m) {
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

func (s Set) refIndexOf() Set {
	if !s.Known() {
		return Latest
	}
	return s
}

func refMatchesIn(r *rule, s string, ranges [][2]int) [][]int {
	if len(ranges) == 1 && ranges[0][1] < 0 {
		return refMatches(r, s)
	}
	var out [][]int
	for _, rg := range ranges {
		for _, m := range refMatches(r, s[rg[0]:rg[1]]) {
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

// refRuns are the old scans of the rules judged by runs, by name.
var refRuns = map[string]func(s string) [][2]int{
	"aws-secret-access-key":   refScanRuns(40, 40, false),
	"high-entropy-assignment": refScanRuns(20, 512, true),
}

func refMatches(r *rule, s string) [][]int {
	scan := refRuns[r.name]
	if scan == nil {
		return r.re.FindAllStringSubmatchIndex(s, -1)
	}
	var out [][]int
	for _, m := range scan(s) {
		out = append(out, []int{m[0], m[1]})
	}
	return out
}

func refScanRuns(min, max int, assign bool) func(s string) [][2]int {
	return func(s string) [][2]int {
		var out [][2]int
		for i := 0; i < len(s); {
			if !secretByte(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && secretByte(s[j]) {
				j++
			}
			end := j
			for end < len(s) && s[end] == '=' && end-j < 2 {
				end++
			}
			n := j - i
			ok := n >= min && n <= max && (end == len(s) || !secretByte(s[end]) && s[end] != '=')
			if ok && assign {
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
}

type refHintIndex struct {
	bits       [1 << 16 / 64]uint64
	byPrefix   map[uint16][]hintRef
	n          int
	always     []bool
	ruleHints  [][]int
	alwaysOnly [][][2]int
}

var refIndexes = func() []*refHintIndex {
	out := make([]*refHintIndex, len(sets))
	for n := 1; n < len(sets); n++ {
		out[n] = newRefHintIndex(sets[n])
	}
	return out
}()

func newRefHintIndex(rules []rule) *refHintIndex {
	ix := &refHintIndex{byPrefix: map[uint16][]hintRef{}, always: make([]bool, len(rules)), ruleHints: make([][]int, len(rules))}
	add := func(r int, h string, exact bool) {
		k := pairKey(h[0], h[1])
		ix.bits[k>>6] |= 1 << (k & 63)
		ix.byPrefix[k] = append(ix.byPrefix[k], hintRef{id: ix.n, text: h, exact: exact})
		ix.ruleHints[r] = append(ix.ruleHints[r], ix.n)
		ix.n++
	}
	for i, r := range rules {
		if len(r.hints) == 0 && len(r.exact) == 0 {
			ix.always[i] = true
		}
		for _, h := range r.exact {
			add(i, h, true)
		}
		for _, h := range r.hints {
			add(i, h, false)
		}
	}
	ix.alwaysOnly = make([][][2]int, len(rules))
	for r, a := range ix.always {
		if a {
			ix.alwaysOnly[r] = whole
		}
	}
	return ix
}

func (ix *refHintIndex) rulesFor(s string, rules []rule) [][][2]int {
	var hits [][]int
	for i := 0; i+1 < len(s); i++ {
		k := pairKey(s[i], s[i+1])
		if ix.bits[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, h := range ix.byPrefix[k] {
			if hintAt(s, i, h) {
				if hits == nil {
					hits = make([][]int, ix.n)
				}
				hits[h.id] = append(hits[h.id], i)
			}
		}
	}
	if hits == nil {
		return ix.alwaysOnly
	}
	out := make([][][2]int, len(ix.always))
	for r := range out {
		if ix.always[r] {
			out[r] = whole
			continue
		}
		var pos []int
		for _, id := range ix.ruleHints[r] {
			pos = append(pos, hits[id]...)
		}
		if len(pos) == 0 {
			continue
		}
		if rules[r].multiline {
			out[r] = whole
			continue
		}
		out[r] = lineRanges(s, pos)
	}
	return out
}

// refRedactJSON is RedactJSON as it was before the walker: json.Valid,
// strings with escapes decoded by json.Unmarshal, judged by refFind.
func refRedactJSON(data []byte) ([]byte, bool, error) {
	if len(data) == 0 {
		return data, false, nil // no payload
	}
	if !json.Valid(data) {
		return data, false, fmt.Errorf("redact: payload is not JSON")
	}
	var out []byte
	last, changed := 0, false
	key := "" // the member name the next value belongs to
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i)
			s := string(data[i+1 : end-1])
			if bytes.IndexByte(data[i:end], '\\') >= 0 {
				if err := json.Unmarshal(data[i:end], &s); err != nil {
					return data, false, fmt.Errorf("redact: string at %d: %w", i, err)
				}
			}
			isKey := nextIs(data, end, ':')
			var red string
			switch {
			case isKey && nextIs(data, afterColon(data, end), '"'):
				red = s // judged with its value, as key=value
			case isKey:
				red = refRedact(s)
			case key != "":
				red = refRedactMember(key, s)
			default:
				red = refRedact(s)
			}
			if isKey {
				key = s
			} else {
				key = ""
			}
			if red != s {
				out = append(out, data[last:i]...)
				out = appendString(out, red)
				last, changed = end, true
			}
			i = end - 1
		case '{', '[', ',':
			key = ""
		}
	}
	if !changed {
		return data, false, nil
	}
	return append(out, data[last:]...), true, nil
}

func refRedact(s string) string {
	if s == "" {
		return s
	}
	return apply(s, refFind(s, Latest, true, false))
}

func refRedactMember(key, value string) string {
	text := key + "=" + value
	off := len(key) + 1
	var sp []span
	for _, x := range refFind(text, Latest, true, false) {
		if x.hi <= off {
			continue
		}
		x.lo, x.hi = max(x.lo, off)-off, x.hi-off
		sp = append(sp, x)
	}
	return apply(value, sp)
}
