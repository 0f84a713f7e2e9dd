package fileedit

import (
	"fmt"
	"strings"
)

// contextLines is how many unchanged lines a hunk shows around a change.
const contextLines = 3

// maxDiffD bounds the edit distance (in lines) the diff searches for a
// shortest script; past it the rest is shown as replaced whole. The diff
// stays correct (it applies), only longer than needed.
const maxDiffD = 4000

// Unified is the unified diff turning a into b ("" when they are equal),
// under the headers "--- oldName" and "+++ newName"; an empty name is
// /dev/null (a file created or deleted). It applies with patch -p0 (or
// -p1 when the names carry a/ and b/), git apply and go-gitdiff.
func Unified(oldName, newName string, a, b []byte) string {
	if string(a) == string(b) && oldName != "" && newName != "" {
		return ""
	}
	as, bs := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(as, bs)
	var w strings.Builder
	if oldName == "" {
		oldName = "/dev/null"
	}
	if newName == "" {
		newName = "/dev/null"
	}
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", oldName, newName)
	// Indices of changes, grouped into hunks.
	n := len(ops)
	oldAt, newAt := make([]int, n+1), make([]int, n+1) // lines before op i
	for i, o := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if o.kind != '+' {
			oldAt[i+1]++
		}
		if o.kind != '-' {
			newAt[i+1]++
		}
	}
	for i := 0; i < n; {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-contextLines)
		end := i // last change of the hunk
		for j := i + 1; j < n; j++ {
			if ops[j].kind == ' ' {
				continue
			}
			if j-end > 2*contextLines {
				break
			}
			end = j
		}
		stop := min(n, end+1+contextLines)
		ol, nl := oldAt[stop]-oldAt[start], newAt[stop]-newAt[start]
		os, ns := oldAt[start], newAt[start]
		if ol > 0 {
			os++
		}
		if nl > 0 {
			ns++
		}
		fmt.Fprintf(&w, "@@ -%d,%d +%d,%d @@\n", os, ol, ns, nl)
		for _, o := range ops[start:stop] {
			w.WriteByte(o.kind)
			w.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return w.String()
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// diffLines is a shortest edit script from a to b (Myers' O(ND)
// algorithm) after their common prefix and suffix, or — past maxDiffD —
// the middle replaced whole.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

func myers(a, b []string) []op {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaced(a, b)
	}
	limit := n + m
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	found := -1
	for d := 0; d <= limit && d <= maxDiffD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		if found >= 0 {
			break
		}
	}
	if found < 0 {
		return replaced(a, b)
	}
	// Walk back from (n, m).
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		prev := trace[d-1] // indexed k+(d-1)
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		snake := px // an insertion moves down from (px, py), a deletion right
		if pk == k-1 {
			snake = px + 1
		}
		for x > snake {
			rev = append(rev, op{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if pk == k+1 {
			rev = append(rev, op{'+', b[y-1]})
		} else {
			rev = append(rev, op{'-', a[x-1]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, op{' ', a[x-1]})
		x, y = x-1, y-1
	}
	ops := make([]op, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

func replaced(a, b []string) []op {
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, op{'-', l})
	}
	for _, l := range b {
		ops = append(ops, op{'+', l})
	}
	return ops
}
