package memory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy/shell"
)

// Limits of the command statistics.
const (
	// MaxShapes bounds the command shapes counted; past it, new shapes are
	// not counted (Overflow), so memory stays bounded whatever the history.
	MaxShapes = 10000
	// maxShapesPerCommand bounds the shapes one script counts under.
	maxShapesPerCommand = 8
	// noteMinFailures is how often a shape must have failed to get a note.
	noteMinFailures = 3
)

// Shapes are the command shapes of a shell script: for each simple
// command whose program is known statically, "program [subcommand] flags"
// with the flags under their canonical names, sorted — so "apt-get
// install -y nginx" and "apt-get -y install curl" are one shape, "apt-get
// install -y", and differ from "apt-get install". Operands are left out: a
// shape is how a tool is used, not on what. At most 8, in order, each once.
func Shapes(script string) []string {
	var out []string
	for _, c := range shell.Parse(script) {
		if c.Program == "" {
			continue
		}
		parts := []string{c.Program}
		if c.Subcommand != "" {
			parts = append(parts, c.Subcommand)
		}
		var flags []string
		for _, f := range c.Flags {
			flags = append(flags, f.Name)
		}
		slices.Sort(flags)
		parts = append(parts, slices.Compact(flags)...)
		s := strings.Join(parts, " ")
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
		if len(out) == maxShapesPerCommand {
			break
		}
	}
	return out
}

// CommandStat is how one command shape fared.
type CommandStat struct {
	Shape     string `json:"shape"`
	Successes int    `json:"successes"`
	Failures  int    `json:"failures"`
}

// attemptRef names an attempt within a run.
type attemptRef struct {
	step    string
	attempt int
}

// foldAssigned remembers the shapes of a shell attempt until it finishes,
// and the facts a validation step releases if it succeeds.
func (m *Memory) foldAssigned(ev event.Event) {
	var d assignedRef
	if ev.Decode(&d) != nil || ev.Run == "" {
		return
	}
	m.noteReleases(ev.Run, attemptRef{d.Step.ID, d.Attempt}, d.Step.Releases, d.Approved != "") // release.go
	if d.Step.Kind != event.KindShell {
		return
	}
	shapes := m.shapesOf(d.Step.Run)
	if len(shapes) == 0 {
		return
	}
	runs := m.attempts[ev.Run]
	if runs == nil {
		runs = map[attemptRef][]string{}
		m.attempts[ev.Run] = runs
	}
	runs[attemptRef{d.Step.ID, d.Attempt}] = shapes
}

// assignedRef is what the memory reads of a task.assigned: the fold
// decodes only these fields of a payload that carries the whole step.
type assignedRef struct {
	Step struct {
		ID   string         `json:"id"`
		Kind event.StepKind `json:"kind"`
		Run  string         `json:"run"`
		// Releases are a validation step's (release.go).
		Releases []string `json:"releases"`
	} `json:"step"`
	Attempt  int    `json:"attempt"`
	Approved string `json:"approved"`
}

// finishedRef is what the memory reads of a task.finished.
type finishedRef struct {
	Step        string             `json:"step"`
	Attempt     int                `json:"attempt"`
	Status      event.TaskStatus   `json:"status"`
	Class       event.FailureClass `json:"class"`
	CommandHash string             `json:"command_hash"`
}

// maxShapesCached bounds the fold's memory of the shapes of scripts.
const maxShapesCached = 1024

// shapesOf is Shapes(script), remembered for the scripts seen last: a
// plan runs the same commands over and over. The slice is shared: read
// only.
func (m *Memory) shapesOf(script string) []string {
	if s, ok := m.shapeCache[script]; ok {
		return s
	}
	if m.shapeCache == nil || len(m.shapeCache) >= maxShapesCached {
		m.shapeCache = make(map[string][]string)
	}
	s := Shapes(script)
	m.shapeCache[script] = s
	return s
}

// foldShapes counts a finished attempt under its shapes.
func (m *Memory) foldShapes(run string, d finishedRef) {
	ref := attemptRef{d.Step, d.Attempt}
	shapes, ok := m.attempts[run][ref]
	if !ok {
		return
	}
	delete(m.attempts[run], ref)
	if d.Status != event.TaskSucceeded && (d.Status != event.TaskFailed || d.Class != event.ClassLogic) {
		return // a timeout or a lost node says nothing of the command
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range shapes {
		st, known := m.mu.shapes[s]
		if !known && len(m.mu.shapes) >= MaxShapes {
			m.mu.overflow++
			continue
		}
		if d.Status == event.TaskSucceeded {
			st.Successes++
		} else {
			st.Failures++
		}
		m.mu.shapes[s] = st
	}
}

// Commands returns the command shapes, those that failed most first (then
// by shape), at most limit (all when limit <= 0), and how many shapes went
// uncounted because MaxShapes was reached.
func (m *Memory) Commands(limit int) ([]CommandStat, int) {
	m.mu.RLock()
	out := make([]CommandStat, 0, len(m.mu.shapes))
	for s, st := range m.mu.shapes {
		out = append(out, CommandStat{Shape: s, Successes: st.Successes, Failures: st.Failures})
	}
	overflow := m.mu.overflow
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b CommandStat) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.Shape, b.Shape))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, overflow
}

// Notes are the adaptive notes a planner's prompt carries: for each shape
// that failed at least 3 times and at least as often as it succeeded, one
// sentence — naming, when there is one, the variant with more flags that
// mostly succeeds ("`apt-get install` without -y failed 4 of 5 times;
// with -y it succeeded 5 of 5"). Most failures first, at most max.
func (m *Memory) Notes(max int) []string {
	all, _ := m.Commands(0)
	by := make(map[string]CommandStat, len(all))
	for _, c := range all {
		by[c.Shape] = c
	}
	var notes []string
	for _, c := range all {
		if len(notes) == max {
			break
		}
		if c.Failures < noteMinFailures || c.Failures < c.Successes {
			continue
		}
		n := c.Failures + c.Successes
		if better, extra, ok := betterVariant(c.Shape, all); ok {
			b := by[better]
			notes = append(notes, fmt.Sprintf("`%s` without %s failed %d of %d times; with %s it succeeded %d of %d",
				c.Shape, extra, c.Failures, n, extra, b.Successes, b.Successes+b.Failures))
			continue
		}
		notes = append(notes, fmt.Sprintf("`%s` failed %d of %d times", c.Shape, c.Failures, n))
	}
	return notes
}

// betterVariant finds the shape with the same program and subcommand and
// every flag of shape plus more that succeeded at least twice and more
// often than it failed; extra names the flags it adds.
func betterVariant(shape string, all []CommandStat) (string, string, bool) {
	words := strings.Fields(shape)
	best, bestExtra, bestRate := "", "", 0.0
	for _, c := range all {
		cw := strings.Fields(c.Shape)
		if c.Shape == shape || len(cw) <= len(words) || c.Successes < 2 || c.Successes <= c.Failures {
			continue
		}
		if !hasAll(cw, words) {
			continue
		}
		var extra []string
		for _, w := range cw {
			if !slices.Contains(words, w) {
				extra = append(extra, w)
			}
		}
		if len(extra) == 0 || !strings.HasPrefix(extra[0], "-") {
			continue // another subcommand, not more flags
		}
		rate := float64(c.Successes) / float64(c.Successes+c.Failures)
		if rate > bestRate {
			best, bestExtra, bestRate = c.Shape, strings.Join(extra, " "), rate
		}
	}
	return best, bestExtra, best != ""
}

// hasAll reports whether have holds every word of want, want's first word
// (the program) and any subcommand in the same places.
func hasAll(have, want []string) bool {
	if have[0] != want[0] {
		return false
	}
	if len(want) > 1 && !strings.HasPrefix(want[1], "-") && (len(have) < 2 || have[1] != want[1]) {
		return false
	}
	if len(have) > 1 && !strings.HasPrefix(have[1], "-") && (len(want) < 2 || want[1] != have[1]) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
