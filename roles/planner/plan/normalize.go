package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/fileedit"
)

// DefaultBackoff is the backoff Normalize gives a step that has retries but
// no backoff.
const DefaultBackoff = time.Second

// Validate reports every problem of a plan built in code, with the same
// checks Parse applies to a file: ids, fields, references and cycles. It
// does not change p. Empty Kind and OnFailure mean their defaults, and
// depends_on may name subgoals; a plan that passes Validate may still need
// Normalize before it is proposed. Problems are located by path
// ("steps[2].depends_on[0]"), without file or line.
func Validate(p *event.Plan) error {
	ps := &problems{}
	if p == nil {
		ps.add(pos{}, "plan is nil")
		return ps.err()
	}
	compile(fromPlan(p), ps)
	return ps.err()
}

// Normalize validates p and, if it is valid, rewrites it into normal form:
// defaults filled, subgoal references expanded into step dependencies,
// depends_on deduplicated, steps in topological order. Normalize of a
// normalized plan changes nothing. On error p is left unchanged.
func Normalize(p *event.Plan) error {
	ps := &problems{}
	if p == nil {
		ps.add(pos{}, "plan is nil")
		return ps.err()
	}
	np := compile(fromPlan(p), ps)
	if err := ps.err(); err != nil {
		return err
	}
	*p = *np
	return nil
}

// IsNormal reports whether p is a plan Normalize accepts and leaves
// unchanged (its Open aside, which Normalize does not keep and a planner
// sets from its source), judged by p alone: a value is taken for a secret
// by the patterns of redact.Latest, not by the secret values of this
// process's environment as Normalize does (redact.FindMember), so every
// node decides the same for the same plan — the check a fold may make
// (the orchestrator's, of a plan carried in its goal). p is not changed.
//
// The answer is a function of p's JSON encoding alone, so it is
// remembered by that encoding's SHA-256 (normalMemo): every fold of a
// goal asks about its own decoded copy of the same plan, and only the
// first compiles it.
func IsNormal(p *event.Plan) bool {
	if p == nil {
		return false
	}
	was, err := json.Marshal(p)
	if err != nil {
		return false
	}
	key := sha256.Sum256(was)
	if ok, found := normalMemo.get(key); found {
		return ok
	}
	ok := isNormal(was)
	normalMemo.put(key, ok)
	return ok
}

// isNormal is IsNormal of the plan encoded as was.
func isNormal(was []byte) bool {
	var c event.Plan
	if json.Unmarshal(was, &c) != nil {
		return false
	}
	ps := &problems{patternsOnly: true}
	np := compile(fromPlan(&c), ps)
	if ps.err() != nil || np == nil {
		return false
	}
	np.Open = c.Open
	now, err := json.Marshal(np)
	return err == nil && bytes.Equal(was, now)
}

// normalMemoSize bounds the answers IsNormal remembers: a goal's plan is
// asked about by a handful of folds in a row, so a few recent plans are
// enough.
const normalMemoSize = 64

// normalMemo holds IsNormal's recent answers by the SHA-256 of the plan's
// JSON encoding, the oldest forgotten first. It is safe for concurrent
// use (folds run on their own goroutines).
var normalMemo = memo{answers: make(map[[32]byte]bool, normalMemoSize)}

// memo is a bounded map of answers, forgetting in insertion order.
type memo struct {
	mu      sync.Mutex
	answers map[[32]byte]bool
	order   [][32]byte // keys in insertion order; its length bounds answers
}

func (m *memo) get(k [32]byte) (ok, found bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok, found = m.answers[k]
	return ok, found
}

func (m *memo) put(k [32]byte, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, found := m.answers[k]; found {
		return
	}
	if len(m.order) == normalMemoSize {
		delete(m.answers, m.order[0])
		m.order = append(m.order[:0], m.order[1:]...)
	}
	m.answers[k] = ok
	m.order = append(m.order, k)
}

// compile checks d, adding to ps, and returns the normalized plan when
// there is no problem at all (including problems found while decoding).
func compile(d *draft, ps *problems) *event.Plan {
	if len(d.steps) > MaxSteps {
		ps.add(d.root, "plan has %d steps; the limit is %d", len(d.steps), MaxSteps)
		d.truncated = true
	}
	if len(d.steps) == 0 && !d.stepsBad {
		ps.add(d.root, "plan has no steps: add steps (or subgoals with steps)")
	}
	stepIdx, subIdx := checkIDs(d, ps)
	checkTexts(d, ps)
	checkEditBytes(d, ps)
	checkFacts(d, ps)     // facts.go
	checkArtifacts(d, ps) // artifacts.go
	for _, s := range d.steps {
		checkStep(ps, s)
	}
	checkBranches(d, ps, stepIdx, subIdx)
	checkGit(d, ps, stepIdx)
	if d.truncated {
		return nil
	}
	g := newGraph(d, ps, stepIdx, subIdx)
	if ps.any() {
		return nil
	}
	return g.plan()
}

// plan builds the normalized plan of a checked, acyclic graph.
func (g *graph) plan() *event.Plan {
	d := g.d
	p := &event.Plan{Goal: d.goal, Family: d.family, Steps: make([]event.Step, 0, len(d.steps)), Hypotheses: normalHypotheses(d)}
	if d.git != nil {
		p.Git = gitCopy(d.git.spec)
	}
	for _, sg := range d.subgoals {
		p.Subgoals = append(p.Subgoals, event.Subgoal{ID: sg.id, Title: sg.title})
	}
	for _, i := range g.order() {
		st := d.steps[i].step
		st.Kind = effectiveKind(&st)
		if st.Kind == event.KindFileWrite || st.Kind == event.KindFilePatch {
			st.Idempotent = true // applying an edit again is a no-op
		}
		if m, err := fileedit.ParseMode(st.Mode); st.Mode != "" && err == nil {
			st.Mode = fileedit.FormatMode(m)
		}
		if st.OnFailure == "" {
			st.OnFailure = event.OnFailureAbort
		}
		if st.Retries > 0 && st.Backoff == 0 {
			st.Backoff = event.Duration(DefaultBackoff)
		}
		st.DependsOn = nil
		for _, e := range g.deps[i] {
			st.DependsOn = append(st.DependsOn, d.steps[e.to].step.ID)
		}
		st.Env = maps.Clone(st.Env)
		if len(st.Env) == 0 {
			st.Env = nil
		}
		normalBranches(&st)
		st.Capabilities = slices.Compact(slices.Sorted(slices.Values(st.Capabilities)))
		if len(st.Capabilities) == 0 {
			st.Capabilities = nil
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// FromGoal returns the plan a goal carries (GoalSubmittedData.Plan) when
// the orchestrator plans the run from it, as revision 1 of source "file":
// a plan next to its plan file, in normal form (IsNormal). Otherwise nil:
// the run's plan is the one a planner proposes. Every fold that follows a
// run's plan revisions (the orchestrator's, memory's, the artifacts')
// decides with it, so they agree on which goals planned their runs.
func FromGoal(d event.GoalSubmittedData) *event.Plan {
	if d.Plan == nil || d.PlanFile == "" || !IsNormal(d.Plan) {
		return nil
	}
	return d.Plan
}
