package redact

import (
	"sort"
	"strings"
	"sync"
)

// hintIndex finds, in one pass over a text, which rules' hints occur in
// it: a bitset of the (ASCII-lowercased) first two bytes of every hint,
// and the hints that start with each pair. It replaces one strings.Contains
// per hint, which scanning large outputs for dozens of hints made the
// main cost of redaction.
type hintIndex struct {
	bits [1 << 16 / 64]uint64
	// slot[pair] is 1 + the index in byPrefix of the hints that start
	// with pair (0: none).
	slot     [1 << 16]uint8
	byPrefix [][]hintRef
	n        int
	// always marks rules without hints; ruleHints lists each rule's hint ids.
	always    []bool
	ruleHints [][]int
	// alwaysOnly is rulesFor's answer for a text holding no hint (most
	// strings of a payload): whole for the rules without hints. Shared and
	// read-only.
	alwaysOnly [][][2]int
	// alwaysRules lists the rules without hints, in order: the rules
	// rulesFor names for a text holding no hint. Shared and read-only.
	alwaysRules []int
}

type hintRef struct {
	id    int
	text  string
	exact bool
}

var lowerASCII = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		t[i] = c
	}
	return t
}()

func pairKey(a, b byte) uint16 { return uint16(lowerASCII[a])<<8 | uint16(lowerASCII[b]) }

func newHintIndex(rules []rule) *hintIndex {
	ix := &hintIndex{always: make([]bool, len(rules)), ruleHints: make([][]int, len(rules))}
	add := func(r int, h string, exact bool) {
		if len(h) < 2 {
			panic("redact: hint shorter than two bytes: " + h)
		}
		k := pairKey(h[0], h[1])
		ix.bits[k>>6] |= 1 << (k & 63)
		if ix.slot[k] == 0 {
			if len(ix.byPrefix) == 255 {
				panic("redact: more than 255 hint prefixes")
			}
			ix.byPrefix = append(ix.byPrefix, nil)
			ix.slot[k] = uint8(len(ix.byPrefix))
		}
		// A hint several rules share is looked for once.
		for _, ref := range ix.byPrefix[ix.slot[k]-1] {
			if ref.text == h && ref.exact == exact {
				ix.ruleHints[r] = append(ix.ruleHints[r], ref.id)
				return
			}
		}
		ix.byPrefix[ix.slot[k]-1] = append(ix.byPrefix[ix.slot[k]-1], hintRef{id: ix.n, text: h, exact: exact})
		ix.ruleHints[r] = append(ix.ruleHints[r], ix.n)
		ix.n++
	}
	for i, r := range rules {
		if len(r.hints) == 0 && len(r.exact) == 0 {
			ix.always[i] = true
		} else if r.runs != nil {
			panic("redact: a rule by runs with hints: " + r.name)
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
			ix.alwaysRules = append(ix.alwaysRules, r)
		}
	}
	return ix
}

// whole is the range list of a rule that must look at the whole text.
var whole = [][2]int{{0, -1}}

// textScan is what rulesFor's one pass over a text tells find.
type textScan struct {
	// where says, for each rule, where in the text it may match: nil when
	// nowhere (none of its hints occurs), whole for the whole text (a rule
	// without hints, or one whose matches span lines), otherwise the lines
	// that hold one of its hints, in order and merged. Read-only (it may
	// be shared).
	where [][][2]int
	// rules lists, in order, the rules whose where is not nil. Read-only.
	rules []int
	// longest is the length of the longest run of secretByte in the text
	// (longestRun).
	longest int
}

// rulesFor finds the hints of the rules in s, and the longest run of
// secretByte, in one pass.
func (ix *hintIndex) rulesFor(s string, rules []rule) textScan {
	var hits [][]int // by hint id: positions
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if secretBytes[c] {
			run++
		} else {
			longest, run = max(longest, run), 0
		}
		if i+1 == len(s) {
			break
		}
		k := pairKey(c, s[i+1])
		if ix.bits[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, h := range ix.byPrefix[ix.slot[k]-1] {
			if hintAt(s, i, h) {
				if hits == nil {
					hits = make([][]int, ix.n)
				}
				hits[h.id] = append(hits[h.id], i)
			}
		}
	}
	longest = max(longest, run)
	if hits == nil {
		return textScan{where: ix.alwaysOnly, rules: ix.alwaysRules, longest: longest}
	}
	out := textScan{where: make([][][2]int, len(ix.always)), longest: longest}
	for r := range out.where {
		if ix.always[r] {
			out.where[r] = whole
			out.rules = append(out.rules, r)
			continue
		}
		var pos []int
		for _, id := range ix.ruleHints[r] {
			pos = append(pos, hits[id]...)
		}
		if len(pos) == 0 {
			continue
		}
		out.rules = append(out.rules, r)
		if rules[r].multiline {
			out.where[r] = whole
			continue
		}
		out.where[r] = lineRanges(s, pos)
	}
	return out
}

// lineRanges returns the lines of s that hold the positions pos, merged.
func lineRanges(s string, pos []int) [][2]int {
	sort.Ints(pos)
	var out [][2]int
	for _, p := range pos {
		if n := len(out); n > 0 && p < out[n-1][1] {
			continue
		}
		lo := strings.LastIndexByte(s[:p], '\n') + 1
		hi := strings.IndexByte(s[p:], '\n')
		if hi < 0 {
			hi = len(s)
		} else {
			hi += p
		}
		if n := len(out); n > 0 && lo <= out[n-1][1] {
			out[n-1][1] = hi
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

func hintAt(s string, i int, h hintRef) bool {
	if len(s)-i < len(h.text) {
		return false
	}
	if h.exact {
		return s[i:i+len(h.text)] == h.text
	}
	for j := 0; j < len(h.text); j++ {
		if lowerASCII[s[i+j]] != h.text[j] {
			return false
		}
	}
	return true
}

// indexes[n] builds the hint index of set n at its first use: a process
// uses one set or two (most only Latest), and building every set's index
// at start cost each process, agentctl's every invocation, ~0.1 ms.
var indexes = func() []func() *hintIndex {
	out := make([]func() *hintIndex, len(sets))
	for n := 1; n < len(sets); n++ {
		out[n] = sync.OnceValue(func() *hintIndex { return newHintIndex(sets[n]) })
	}
	return out
}()

func (s Set) index() *hintIndex {
	if !s.Known() {
		return indexes[Latest]()
	}
	return indexes[s]()
}
