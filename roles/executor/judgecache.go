package executor

import (
	"slices"
	"strings"
	"sync"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Judgement cache bounds.
const (
	// judgeCacheSize is how many judgements the executor keeps.
	judgeCacheSize = 512
	// judgeCacheMaxKey is the largest judgement key kept (the command, its
	// check and its environment, in bytes): a larger step is judged every
	// time, so the cache holds at most about judgeCacheSize ×
	// judgeCacheMaxKey bytes.
	judgeCacheMaxKey = 8 << 10
)

// judgeKey is everything the judgement of a shell step depends on: the
// policy's text (its hash) and version, the working directory it is judged
// in and the executor's work directory (what ./ in the file scope means),
// and the step's fields other than its id — a shell step's judgement reads
// its command, check and environment; the others are in the key so that a
// judge that one day reads them cannot be answered from a judgement of
// another step.
type judgeKey struct {
	hash    string
	version int64
	dir     string
	work    string
	run     string
	check   string
	creates string
	runAs   string
	env     string // the environment's names and values, sorted
}

// judgement is the part of vet's decision that is a pure function of its
// judgeKey: whether the working directory lies outside the file scope,
// and otherwise the policy's verdict on the step (what vet reads of it).
type judgement struct {
	outside bool
	action  policy.Action
	level   policy.Level
	rule    string
	why     string
}

// judgeCache keeps the judgements of shell steps, so that the same step
// under the same policy version is not parsed and judged again. Entries
// are never stale: a changed policy has another hash, so another key.
type judgeCache struct {
	mu sync.Mutex
	m  map[judgeKey]judgement
}

// judgeKeyOf is the key of judging s with p in dir (work is the
// executor's work directory, "" when the file scope is not checked); ok
// is false for a step that is not cached (not a shell step, or too big).
func judgeKeyOf(p *policy.Policy, s event.Step, dir, work string) (judgeKey, bool) {
	if s.Kind != event.KindShell || s.Path != "" || s.Content != "" || s.Patch != "" || s.Mode != "" {
		return judgeKey{}, false
	}
	size := len(s.Run) + len(s.Check) + len(s.Creates) + len(s.RunAs)
	for k, v := range s.Env {
		size += len(k) + len(v) + 2
	}
	if size > judgeCacheMaxKey {
		return judgeKey{}, false
	}
	k := judgeKey{hash: p.Hash(), version: p.Version, dir: dir, work: work, run: s.Run, check: s.Check,
		creates: s.Creates, runAs: s.RunAs}
	if len(s.Env) > 0 {
		names := make([]string, 0, len(s.Env))
		for n := range s.Env {
			names = append(names, n)
		}
		slices.Sort(names)
		var b strings.Builder
		b.Grow(size)
		for _, n := range names {
			b.WriteString(n)
			b.WriteByte(0)
			b.WriteString(s.Env[n])
			b.WriteByte(0)
		}
		k.env = b.String()
	}
	return k, true
}

func (c *judgeCache) get(k judgeKey) (judgement, bool) {
	c.mu.Lock()
	j, ok := c.m[k]
	c.mu.Unlock()
	return j, ok
}

// put keeps j under k, forgetting an arbitrary judgement when full.
func (c *judgeCache) put(k judgeKey, j judgement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[judgeKey]judgement)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= judgeCacheSize {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = j
}
