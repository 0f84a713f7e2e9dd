package orchestrator

import (
	"strconv"
	"strings"
)

// Decision keys. A key names what a decision does, not the event that
// carries it, so that a leader that emitted a decision and has not yet folded
// it back does not emit it again:
//
//	accept/<run>/<revision>
//	assign/<run>/<step>/<attempt>/<node>
//	cancel/<run>/<step>/<attempt>
//	finish/<run>
//
// Run ids and node ids contain no "/"; step ids may.

func acceptKey(run string, rev int) string { return "accept/" + run + "/" + strconv.Itoa(rev) }

func assignKey(run, step string, attempt int, node string) string {
	return "assign/" + run + "/" + step + "/" + strconv.Itoa(attempt) + "/" + node
}

func cancelKey(run, step string, attempt int) string {
	return "cancel/" + run + "/" + step + "/" + strconv.Itoa(attempt)
}

func finishKey(run string) string { return "finish/" + run }

// attemptRef names one attempt of one step.
type attemptRef struct {
	run, step string
	attempt   int
}

// parseAssignKey splits an assign key into the attempt and the node; ok is
// false for any other key.
func parseAssignKey(key string) (ref attemptRef, node string, ok bool) {
	rest, ok := strings.CutPrefix(key, "assign/")
	if !ok {
		return ref, "", false
	}
	run, rest, ok1 := strings.Cut(rest, "/")
	rest, node, ok2 := cutLast(rest)
	step, att, ok3 := cutLast(rest)
	n, err := strconv.Atoi(att)
	if !ok1 || !ok2 || !ok3 || err != nil {
		return ref, "", false
	}
	return attemptRef{run, step, n}, node, true
}

// cutLast splits s around its last "/".
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
