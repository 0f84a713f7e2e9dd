package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// Allowed values, for messages.
var (
	kinds      = []string{string(event.KindShell), string(event.KindNoop), string(event.KindFileWrite), string(event.KindFilePatch), string(event.KindCritique), string(event.KindTool), string(event.KindResearch), string(event.KindSynthesise)}
	onFailures = []string{string(event.OnFailureAbort), string(event.OnFailureRetry), string(event.OnFailureContinue), string(event.OnFailureReplan)}
)

// checkID reports an id that breaks the protocol's id grammar
// (event.ValidStepID). what is "step" or "subgoal".
func checkID(ps *problems, at pos, what, id string) {
	if id == "" {
		ps.add(at, "%s has no id", what)
		return
	}
	valid := event.ValidStepID
	if what == "subgoal" {
		valid = event.ValidSubgoalID
	}
	if err := valid(id); err != nil {
		ps.add(at, "%v", err)
	}
}

// checkIDs checks every step and subgoal id, reports duplicates and ids
// shared by a step and a subgoal, and returns the id → index maps (first
// declaration wins).
func checkIDs(d *draft, ps *problems) (steps, subgoals map[string]int) {
	subgoals = make(map[string]int, len(d.subgoals))
	for k, sg := range d.subgoals {
		checkID(ps, sg.idAt, "subgoal", sg.id)
		if sg.id == "" {
			continue
		}
		if first, dup := subgoals[sg.id]; dup {
			ps.add(sg.idAt, "duplicate subgoal id %q (first declared at %s)", sg.id, d.subgoals[first].idAt)
			continue
		}
		subgoals[sg.id] = k
	}
	steps = make(map[string]int, len(d.steps))
	for i, s := range d.steps {
		at := s.pos("id")
		if !s.ok("id") {
			continue
		}
		checkID(ps, at, "step", s.step.ID)
		if s.step.ID == "" {
			continue
		}
		if first, dup := steps[s.step.ID]; dup {
			ps.add(at, "duplicate step id %q (first declared at %s)", s.step.ID, d.steps[first].pos("id"))
			continue
		}
		if k, clash := subgoals[s.step.ID]; clash {
			ps.add(at, "step id %q is also the id of a subgoal (declared at %s): step and subgoal ids share one namespace", s.step.ID, d.subgoals[k].idAt)
		}
		steps[s.step.ID] = i
	}
	return steps, subgoals
}

// checkTexts reports secrets in the plan's goal and its subgoals' ids and
// titles (checkStep covers the steps).
func checkTexts(d *draft, ps *problems) {
	goalAt := d.root.child("goal")
	if d.goalAt != nil {
		goalAt = *d.goalAt
	}
	checkSecret(ps, goalAt, "goal", d.goal)
	for _, sg := range d.subgoals {
		checkSecret(ps, sg.idAt, "id", sg.id)
		checkSecret(ps, sg.at.child("title"), "title", sg.title)
	}
}

// checkStep reports the problems of one step's fields.
func checkStep(ps *problems, s *draftStep) {
	st := &s.step
	switch st.Kind {
	case "", event.KindShell, event.KindNoop, event.KindFileWrite, event.KindFilePatch, event.KindCritique, event.KindTool,
		event.KindResearch, event.KindSynthesise:
	case event.KindFileRestore:
		ps.add(s.pos("kind"), "kind %s is not for plans: the orchestrator makes file.restore steps to compensate file edits; allowed: %s", st.Kind, strings.Join(kinds, ", "))
	case event.KindGitWorktree, event.KindGitFinish, event.KindGitDiscard:
		ps.add(s.pos("kind"), "kind %s is not for plans: give the plan a git block and the planner adds the git steps; allowed: %s", st.Kind, strings.Join(kinds, ", "))
	default:
		ps.add(s.pos("kind"), "unknown kind %q; allowed: %s", st.Kind, strings.Join(kinds, ", "))
	}
	switch kind := effectiveKind(st); {
	case s.blank("run", st.Run):
		ps.add(s.pos("run"), "run is empty: give the command to execute; a step meant to do nothing leaves run out (kind: noop)")
	case kind == event.KindShell && st.Run == "" && s.ok("run"):
		ps.add(s.pos("run"), "shell step needs run: the command to execute")
	case kind == event.KindNoop && st.Run != "":
		ps.add(s.pos("run"), "noop step has run; remove run or set kind: shell")
	}
	checkFileFields(ps, s, effectiveKind(st))
	checkCritique(ps, s, effectiveKind(st))
	checkTool(ps, s, effectiveKind(st))
	checkResearch(ps, s, effectiveKind(st)) // research.go
	if s.blank("check", st.Check) {
		ps.add(s.pos("check"), "check is empty: give the command whose exit 0 skips the step, or remove check")
	}
	if s.blank("creates", st.Creates) {
		ps.add(s.pos("creates"), "creates is empty: give the path whose existence skips the step, or remove creates")
	}
	if s.blank("cwd", st.Cwd) {
		ps.add(s.pos("cwd"), "cwd is empty: give a directory, or remove cwd for the executor's default")
	}
	checkCommand(ps, s.pos("run"), "run", st.Run)
	checkCommand(ps, s.pos("check"), "check", st.Check)
	checkCommand(ps, s.pos("creates"), "creates", st.Creates)
	for _, f := range []struct{ name, value string }{
		{"id", st.ID}, {"title", st.Title}, {"run", st.Run}, {"check", st.Check}, {"creates", st.Creates}, {"cwd", st.Cwd},
		{"path", st.Path}, {"content", st.Content}, {"patch", st.Patch}, {"compensate", st.Compensate}, {"run_as", st.RunAs},
	} {
		checkSecret(ps, s.pos(f.name), f.name, f.value)
	}
	switch {
	case st.Retries < 0:
		ps.add(s.pos("retries"), "retries must not be negative, got %d", st.Retries)
	case st.Retries > MaxRetries:
		ps.add(s.pos("retries"), "retries is %d; the limit is %d", st.Retries, MaxRetries)
	}
	checkDuration(ps, s.pos("timeout"), "timeout", st.Timeout, MaxTimeout)
	checkDuration(ps, s.pos("backoff"), "backoff", st.Backoff, MaxBackoff)
	switch st.OnFailure {
	case "", event.OnFailureAbort, event.OnFailureContinue, event.OnFailureReplan:
	case event.OnFailureRetry:
		if st.Retries == 0 && s.ok("retries") {
			ps.add(s.pos("on_failure"), "on_failure: retry needs retries > 0")
		}
	default:
		ps.add(s.pos("on_failure"), "unknown on_failure %q; allowed: %s", st.OnFailure, strings.Join(onFailures, ", "))
	}
	checkCapabilities(ps, s)
	for _, name := range slices.Sorted(maps.Keys(st.Env)) {
		at := s.pos("env." + name)
		if !validEnvName(name) {
			ps.add(at, "env name %q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", name)
		}
		v := st.Env[name]
		if strings.IndexByte(v, 0) >= 0 {
			ps.add(at, "env %s contains a NUL byte (no environment can carry one)", name)
		}
		if kind, found := ps.findSecret(name, v); found {
			ps.add(at, "env %s holds what looks like a secret (%s); %s", name, kind, secretAdvice)
		}
	}
}

// secretAdvice ends every "looks like a secret" problem.
const secretAdvice = "events that carry secrets are refused: keep it out of the plan and pass it by reference, e.g. $NAME from the executor's environment"

// checkSecret reports a field whose value signing would refuse: the value
// is judged as the JSON member field: value of the plan.proposed event it
// travels in (redact.FindMember, the rule bus/envelope applies), so a plan
// that passes here is never refused at publish for a secret.
func checkSecret(ps *problems, at pos, field, value string) {
	if kind, found := ps.findSecret(field, value); found {
		ps.add(at, "%s holds what looks like a secret (%s); %s", field, kind, secretAdvice)
	}
}

// findSecret judges the member key: value as signing does
// (redact.FindMember: the patterns of redact.Latest and the secret values
// of this process's environment), or by the patterns alone when ps is
// patternsOnly.
func (ps *problems) findSecret(key, value string) (string, bool) {
	if ps.patternsOnly {
		return redact.Latest.FindMember(key, value)
	}
	return redact.FindMember(key, value)
}

// checkDuration reports a duration that is negative or over its limit.
func checkDuration(ps *problems, at pos, field string, d event.Duration, limit time.Duration) {
	switch {
	case d < 0:
		ps.add(at, "%s must not be negative, got %s", field, d)
	case d.Std() > limit:
		ps.add(at, "%s is %s; the limit is %s", field, d, limit)
	}
}

// checkCommand reports a command string over MaxCommandBytes or holding a
// NUL byte (no shell can carry one).
func checkCommand(ps *problems, at pos, field, cmd string) {
	if len(cmd) > MaxCommandBytes {
		ps.add(at, "%s is %d bytes; the limit is %d", field, len(cmd), MaxCommandBytes)
	}
	if strings.IndexByte(cmd, 0) >= 0 {
		ps.add(at, "%s contains a NUL byte", field)
	}
}

// effectiveKind is the step's kind with the default filled: shell when the
// step has a run command, file.patch when it has a patch, file.write when
// it has a path or content, noop otherwise.
func effectiveKind(st *event.Step) event.StepKind {
	switch {
	case st.Kind != "":
		return st.Kind
	case st.Tool != "":
		return event.KindTool
	case st.Run != "":
		return event.KindShell
	case st.Patch != "":
		return event.KindFilePatch
	case st.Path != "" || st.Content != "":
		return event.KindFileWrite
	default:
		return event.KindNoop
	}
}

// checkCapabilities reports capability names an executor could not
// announce (the grammar of executor.capabilities: letters, digits, '-'
// and '_'), and more of them than MaxCapabilities.
func checkCapabilities(ps *problems, s *draftStep) {
	caps := s.step.Capabilities
	if len(caps) > MaxCapabilities {
		ps.add(s.pos("capabilities"), "%d capabilities; the limit is %d", len(caps), MaxCapabilities)
	}
	for j, c := range caps {
		at := s.pos(fmt.Sprintf("capabilities[%d]", j))
		switch {
		case c == "":
			ps.add(at, "capability is empty")
		case len(c) > MaxCapabilityLen:
			ps.add(at, "capability is %d bytes; the limit is %d", len(c), MaxCapabilityLen)
		case !validCapability(c):
			ps.add(at, "capability %q: only letters, digits, '-' and '_' are allowed", c)
		}
	}
}

// validCapability reports whether c follows the grammar executors
// announce capabilities in (config's executor.capabilities).
func validCapability(c string) bool {
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b == '-' || b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
