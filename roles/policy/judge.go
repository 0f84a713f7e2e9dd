package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/roles/policy/shell"
)

// Names a verdict gives in Rule when no rule of the policy decided.
const (
	// RuleDefault: no rule named the command; the policy's default
	// action applied.
	RuleDefault = "default"
	// RuleUnresolved: part of the command cannot be judged statically.
	RuleUnresolved = "unresolved"
	// RuleScope: the command writes outside the file scope, or where it
	// writes is known only at run time.
	RuleScope = "scope"
)

// Verdict is the judgement of one command. Field names are stable: a
// verdict is recorded in the ledger and printed as JSON.
type Verdict struct {
	// Command is the judged command, as given.
	Command string `json:"command"`
	// Action is what must happen: allow, confirm or deny.
	Action Action `json:"action"`
	// Level is the risk of the riskiest part.
	Level Level `json:"level"`
	// Rule is the name of the rule that decided, or default, unresolved
	// or scope.
	Rule string `json:"rule"`
	// Why explains the decision, naming the simple command and the flag,
	// argument or write that decided.
	Why string `json:"why"`
	// Policy names the policy judged with (name, version, hash).
	Policy Ref `json:"policy"`
	// Approvals is the number of distinct operators who must approve a
	// confirm; 0 for allow and deny.
	Approvals int `json:"approvals"`
	// NotSubmitter: the run's submitter cannot approve.
	NotSubmitter bool `json:"not_submitter,omitempty"`
	// Reversible is false when a rule that judged the command says it
	// cannot be undone.
	Reversible bool `json:"reversible"`
	// Unresolved is true when part of the command cannot be judged
	// statically.
	Unresolved bool `json:"unresolved"`
	// Findings are the parts that matter: every simple command a rule
	// named or that is not allowed, in source order.
	Findings []Finding `json:"findings"`
	// Highlights are the risky parts of the command to show: flags,
	// writes and unresolvable words, each with the rule that raised it.
	Highlights []Highlight `json:"highlights"`
}

// Finding is the judgement of one simple command inside the judged one.
type Finding struct {
	// Command is the simple command as written.
	Command string `json:"command"`
	// Program is its program's base name.
	Program string `json:"program,omitempty"`
	// Via lists what it runs inside ("sudo", "bash -c", "$( )").
	Via []string `json:"via,omitempty"`
	// Span locates it in the judged command.
	Span         shell.Span `json:"span"`
	Action       Action     `json:"action"`
	Level        Level      `json:"level"`
	Rule         string     `json:"rule"`
	Why          string     `json:"why"`
	Irreversible bool       `json:"irreversible,omitempty"`
	Unresolved   bool       `json:"unresolved,omitempty"`

	// runs marks a program that only runs another (sudo): on a tie, the
	// command it runs is the dangerous part to name.
	runs bool
}

// Highlight is a risky part of the judged command.
type Highlight struct {
	// Text is the part as written ("-rf", "--force", "> /etc/passwd").
	Text string `json:"text"`
	// Flags are the canonical flags the text stands for, if it is one.
	Flags []string `json:"flags,omitempty"`
	// Span locates Text in the judged command (start -1 when the part
	// has no place of its own there).
	Span shell.Span `json:"span"`
	// Rule is the rule that raised it; empty for a flag that is risky
	// by nature but decided nothing.
	Rule string `json:"rule,omitempty"`
	// Why says what is risky about it.
	Why string `json:"why"`
}

// Judge judges a shell command with the policy. It is pure: no I/O, the
// same command and policy always give the same verdict.
func (p *Policy) Judge(command string) Verdict { return p.JudgeIn(command, "") }

// JudgeIn judges a command that runs in dir, the step's working
// directory ("" when unknown): relative writes resolve against it, and
// scope globs starting with ./ name it.
func (p *Policy) JudgeIn(command, dir string) Verdict {
	j := judging{p: p, src: command, dir: path.Clean(dir)}
	if dir == "" {
		j.dir = ""
	}
	cmds := shell.Parse(command)
	v := Verdict{Command: command, Policy: p.Ref(), Action: p.Default, Level: Low, Rule: RuleDefault, Reversible: true,
		Findings: []Finding{}, Highlights: []Highlight{}}
	worst := -1
	irreversible := false
	for i := range cmds {
		f, notable := j.command(&cmds[i])
		if !notable {
			continue
		}
		v.Findings = append(v.Findings, f)
		if f.Unresolved {
			v.Unresolved = true
		}
		if f.Irreversible && f.Action == Confirm {
			irreversible = true
		}
		if worst < 0 || worse(f.Action, f.Level, v.Findings[worst].Action, v.Findings[worst].Level) ||
			(f.Action == v.Findings[worst].Action && f.Level == v.Findings[worst].Level && v.Findings[worst].runs && !f.runs) {
			worst = len(v.Findings) - 1
		}
	}
	switch {
	case len(cmds) == 0:
		v.Action, v.Why = Allow, "nothing to run"
	case worst < 0:
		v.Why = fmt.Sprintf("no rule names %s: the default action applies", programs(cmds))
	default:
		w := v.Findings[worst]
		v.Action, v.Level, v.Rule, v.Why = w.Action, w.Level, w.Rule, w.Why
		var more []string
		for i, f := range v.Findings {
			if i != worst && f.Action != Allow && len(more) < 2 {
				more = append(more, f.Why)
			}
		}
		if len(more) > 0 {
			v.Why += "; also: " + strings.Join(more, "; ")
		}
		if n := countNotAllowed(v.Findings) - 1 - len(more); n > 0 {
			v.Why += fmt.Sprintf("; and %d more", n)
		}
	}
	if v.Action == Confirm {
		a := p.Approvals[v.Level]
		v.Approvals, v.NotSubmitter = a.Approvers, a.NotSubmitter
		if irreversible {
			v.Approvals += p.IrreversibleExtra
		}
	}
	v.Reversible = !irreversible
	v.Highlights = mergeHighlights(j.highlights)
	return v
}

func countNotAllowed(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Action != Allow {
			n++
		}
	}
	return n
}

func programs(cmds []shell.Command) string {
	var names []string
	for _, c := range cmds {
		if c.Program != "" && !slices.Contains(names, c.Program) {
			names = append(names, c.Program)
		}
	}
	if len(names) == 0 {
		return "any part"
	}
	return strings.Join(names, ", ")
}

// worse orders decisions: a stricter action first, then a higher level.
func worse(a Action, l Level, b Action, m Level) bool {
	if a != b {
		return a > b
	}
	return l > m
}

type judging struct {
	p          *Policy
	src        string
	dir        string
	highlights []Highlight
}

// outcome is one reason to decide on a simple command.
type outcome struct {
	action       Action
	level        Level
	rule         string
	why          string
	irreversible bool
	unresolved   bool
	// exactCode: an allow rule names the program and exactly the inline
	// code the command runs.
	exactCode bool
}

// command judges one simple command; notable is false when nothing but
// the default action applies to it.
func (j *judging) command(c *shell.Command) (Finding, bool) {
	p := j.p
	f := Finding{Command: c.Text, Program: c.Program, Via: c.Via, Span: c.Span, runs: c.Runs}
	var outs []outcome
	notable := false
	if o, ok := j.rules(c); ok {
		outs = append(outs, o)
		notable = true
	} else if c.Program != "" && c.Opaque == "" {
		outs = append(outs, outcome{action: p.Default, level: Low, rule: RuleDefault})
		notable = p.Default != Allow
	}
	if c.Opaque != "" && !(len(outs) > 0 && outs[0].exactCode) {
		notable = true
		// Never less strict than a command no rule names.
		outs = append(outs, outcome{action: max(p.Unresolved, p.Default), level: High, rule: RuleUnresolved, unresolved: true,
			why: fmt.Sprintf("%s: %s, so it is never allowed without a rule for it", display(c), c.Opaque)})
		j.highlight(c.OpaqueSpan, nil, RuleUnresolved, c.Opaque)
	}
	if o, ok := j.scope(c); ok {
		outs = append(outs, o)
		notable = true
	}
	j.riskyFlags(c)
	if !notable {
		return f, false
	}
	best := outs[0]
	for _, o := range outs[1:] {
		if worse(o.action, o.level, best.action, best.level) {
			best = o
		}
	}
	for _, o := range outs {
		f.Irreversible = f.Irreversible || o.irreversible
		f.Unresolved = f.Unresolved || o.unresolved
	}
	if best.rule == RuleDefault && best.why == "" {
		best.why = fmt.Sprintf("%s: no rule names %s: the default action applies", display(c), c.Program)
	}
	f.Action, f.Level, f.Rule, f.Why = best.action, best.level, best.rule, best.why
	return f, true
}

func display(c *shell.Command) string {
	d := c.Text
	if len(c.Via) > 0 {
		d += " (inside " + strings.Join(c.Via, ", ") + ")"
	}
	return d
}

// hit is a rule that matches a simple command.
type hit struct {
	flags []shell.Flag
	r     *Rule
	maybe []string
	parts []string
	hl    []Highlight
	nf    normFlags
	// effect: the rule matched by what the command does, not by its
	// spelling.
	effect bool
}

// specificity is how narrowly the hit names the command: a rule matched
// by effect counts its effect and its args, not the flags it spells (so
// a narrow allow rule for find ./build -delete decides over rm -rf).
func (h *hit) specificity() int {
	if !h.effect {
		return h.r.Match.specificity()
	}
	n := 1 + len(h.r.Match.Args)
	if len(h.r.Match.AnyArgs) > 0 {
		n++
	}
	return n
}

// rules finds the rule that decides on c. A deny rule that matches
// decides; an allow rule decides only when it is more specific than
// every other matching rule (a narrow exception such as rm -rf ./build);
// otherwise the strictest matching rule decides. A rule that only may
// match (an argument known at run time could supply what it names)
// counts unless it allows, and a deny it may match asks for confirmation
// as anything unresolved does.
func (j *judging) rules(c *shell.Command) (outcome, bool) {
	p := j.p
	var hits []hit
	for i := range p.Rules {
		r := &p.Rules[i]
		h, ok := j.match(r, c)
		if !ok || (len(h.maybe) > 0 && r.action(p) == Allow) {
			continue
		}
		hits = append(hits, h)
	}
	if len(hits) == 0 {
		return outcome{}, false
	}
	var allow, strict *hit
	for i := range hits {
		h := &hits[i]
		if h.r.action(p) == Allow {
			if allow == nil || h.specificity() > allow.specificity() {
				allow = h
			}
			continue
		}
		if strict == nil || stricter(p, h, strict) {
			strict = h
		}
	}
	best := strict
	if strict == nil || (allow != nil && allow.specificity() > maxSpecificity(p, hits)) {
		best = allow
	}
	r := best.r
	o := outcome{action: r.action(p), level: r.Level, rule: r.Name, irreversible: r.Irreversible}
	o.exactCode = o.action == Allow && c.Inline && len(best.maybe) == 0 && slices.Contains(r.Match.Command, c.Program) &&
		len(c.Operands) > 0 && slices.Contains(r.Match.Args, c.Operands[0].Value)
	if len(best.maybe) > 0 && o.action == Deny {
		o.action = p.Unresolved
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: rule %q", display(c), r.Name)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	if len(best.parts) > 0 {
		fmt.Fprintf(&b, " matches %s", strings.Join(best.parts, ", "))
	} else {
		fmt.Fprintf(&b, " matches %s", c.Program)
	}
	if len(best.maybe) > 0 {
		fmt.Fprintf(&b, " (may match: %s)", strings.Join(best.maybe, "; "))
	}
	if bad := j.outsideAllowed(c, best); len(bad) > 0 {
		o.level = r.Level.raise()
		if a := p.Levels[o.level]; a > o.action {
			o.action = a
		}
		fmt.Fprintf(&b, "; %s not in allowed_flags %v: level raised to %s", strings.Join(bad, ", "), r.AllowedFlags, o.level)
	}
	if r.Irreversible {
		b.WriteString("; not reversible")
	}
	var others []string
	for i := range hits {
		h := &hits[i]
		if h.r == r {
			continue
		}
		if best.r.action(p) != Allow && h.r.action(p) != Allow {
			others = append(others, quote(h.r.Name))
			o.irreversible = o.irreversible || h.r.Irreversible
			j.ruleHighlights(c, h)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "; also matches rule %s", strings.Join(others, ", "))
	}
	o.why = b.String()
	if o.action != Allow {
		j.ruleHighlights(c, best)
	}
	return o, true
}

// ruleHighlights records what made a rule match.
func (j *judging) ruleHighlights(c *shell.Command, h *hit) {
	if len(h.hl) == 0 && c.Program != "" {
		j.highlights = append(j.highlights, Highlight{Text: j.at(c.ProgramSpan, c.Program), Span: c.ProgramSpan, Rule: h.r.Name, Why: "matches rule " + quote(h.r.Name)})
	}
	j.highlights = append(j.highlights, h.hl...)
}

func maxSpecificity(p *Policy, hits []hit) int {
	m := -1
	for i := range hits {
		if hits[i].r.action(p) != Allow {
			m = max(m, hits[i].specificity())
		}
	}
	return m
}

// stricter orders non-allow rules: deny, then the higher level, then the
// more specific, then the first.
func stricter(p *Policy, a, b *hit) bool {
	if aa, ba := a.r.action(p), b.r.action(p); aa != ba {
		return aa > ba
	}
	if a.r.Level != b.r.Level {
		return a.r.Level > b.r.Level
	}
	return a.specificity() > b.specificity()
}

// match tests one rule against one simple command: as it is spelled,
// or, for a rule that stands for an effect class (rm -r), by what the
// command does.
func (j *judging) match(r *Rule, c *shell.Command) (hit, bool) {
	h, ok := j.matchSpelled(r, c)
	if ok || len(r.implied) == 0 || len(c.Effects) == 0 {
		return h, ok
	}
	return j.matchEffect(r, c, r.implied)
}

// effectNames are how verdicts name the effect classes.
var effectNames = map[string]string{shell.RecursiveDelete: "a recursive delete", shell.Wipe: "a wipe"}

// matchEffect matches a rule by an effect of one of classes: the rule's
// args and any_args globs apply to what the effect destroys.
func (j *judging) matchEffect(r *Rule, c *shell.Command, classes []string) (hit, bool) {
	m := &r.Match
	for _, e := range c.Effects {
		if !slices.Contains(classes, e.Class) {
			continue
		}
		h := hit{r: r, effect: len(m.Effect) == 0}
		ok := true
		for _, g := range m.Args {
			ok = ok && j.targetsMatch(&h, e, []string{g})
		}
		if len(m.AnyArgs) > 0 {
			ok = ok && j.targetsMatch(&h, e, m.AnyArgs)
		}
		if !ok {
			continue
		}
		what := e.How + " (" + effectNames[e.Class]
		if len(e.Targets) > 0 {
			names := make([]string, 0, len(e.Targets))
			for _, t := range e.Targets {
				names = append(names, t.Text)
			}
			what += " of " + strings.Join(names, " ")
		}
		what += ")"
		h.parts = append([]string{what}, h.parts...)
		h.hl = append(h.hl, Highlight{Text: j.at(e.Span, e.How), Span: e.Span, Rule: r.Name, Why: e.How + " is " + effectNames[e.Class] + ": rule " + quote(r.Name)})
		return h, true
	}
	return hit{r: r}, false
}

// targetsMatch: one of globs matches a path the effect destroys (or may,
// when the path is known only at run time).
func (j *judging) targetsMatch(h *hit, e shell.Effect, globs []string) bool {
	unknown := ""
	for _, t := range e.Targets {
		if !t.Known {
			if unknown == "" {
				unknown = t.Text
			}
			continue
		}
		for _, g := range globs {
			if argGlob(g, t.Path) || argGlob(g, t.Text) {
				h.hl = append(h.hl, Highlight{Text: j.at(t.Span, t.Text), Span: t.Span, Rule: h.r.Name, Why: "matches " + g + " in rule " + quote(h.r.Name)})
				return true
			}
		}
	}
	if unknown != "" {
		h.maybe = append(h.maybe, "the target "+unknown+" is known only at run time")
		return true
	}
	return false
}

// matchSpelled tests one rule against one simple command as written.
func (j *judging) matchSpelled(r *Rule, c *shell.Command) (hit, bool) {
	m := &r.Match
	h := hit{r: r}
	if len(m.Effect) > 0 {
		eh, ok := j.matchEffect(r, c, m.Effect)
		if !ok {
			return h, false
		}
		h.parts, h.hl, h.maybe = eh.parts, eh.hl, eh.maybe
		if len(m.Command) == 0 && len(m.Writes) == 0 {
			return h, true
		}
	}
	if len(m.Command) > 0 {
		if c.Program == "" || !anyGlob(m.Command, c.Program) {
			return h, false
		}
	}
	if len(m.Subcommand) > 0 {
		switch {
		case c.Subcommand != "" && anyGlob(m.Subcommand, c.Subcommand):
			h.parts = append(h.parts, c.Program+" "+c.Subcommand)
		case c.Subcommand == "" && c.Dynamic:
			h.maybe = append(h.maybe, "the subcommand is known only at run time")
		default:
			return h, false
		}
	}
	h.nf = r.flagsFor(c.Program, c.Subcommand)
	for _, want := range h.nf.flags {
		if fl, ok := findFlag(c, want); ok {
			h.flags = append(h.flags, fl)
			h.hl = append(h.hl, j.flagHighlight(fl, r.Name, "matches rule "+quote(r.Name)))
		} else if c.Dynamic {
			h.maybe = append(h.maybe, want+" may come from an argument known only at run time")
		} else {
			return h, false
		}
	}
	if len(h.nf.any) > 0 {
		found := false
		for _, want := range h.nf.any {
			if fl, ok := findFlag(c, want); ok {
				found = true
				h.flags = append(h.flags, fl)
				h.hl = append(h.hl, j.flagHighlight(fl, r.Name, "matches rule "+quote(r.Name)))
			}
		}
		if !found {
			if !c.Dynamic {
				return h, false
			}
			h.maybe = append(h.maybe, "one of "+strings.Join(h.nf.any, ", ")+" may come from an argument known only at run time")
		}
	}
	h.parts = append(h.parts, describeFlags(h.flags)...)
	for _, g := range m.Args {
		if !j.argsMatch(&h, c, []string{g}) {
			return h, false
		}
	}
	if len(m.AnyArgs) > 0 && !j.argsMatch(&h, c, m.AnyArgs) {
		return h, false
	}
	if r.action(j.p) == Allow && !j.exactly(r, c, &h) {
		return h, false
	}
	if len(m.Writes) > 0 {
		found, unknown := false, ""
		for _, w := range c.Writes {
			if !w.Known {
				if unknown == "" {
					unknown = w.Text
				}
				continue
			}
			if anyPathGlob(m.Writes, w.Path) || (w.Glob && anyPathGlob(m.Writes, globDir(w.Path)+"/_")) {
				found = true
				h.parts = append(h.parts, "writes "+w.Path+" ("+w.How+")")
				h.hl = append(h.hl, Highlight{Text: j.at(w.Span, w.Text), Span: w.Span, Rule: r.Name, Why: "writes " + w.Path + ": rule " + quote(r.Name)})
			}
		}
		if !found {
			if unknown == "" {
				return h, false
			}
			h.maybe = append(h.maybe, "the write target "+unknown+" is known only at run time")
		}
	}
	return h, true
}

// exactly holds when an allow rule that names flags or arguments names
// all of them: an allow rule allows exactly what it says, never a command
// with more flags, more operands or parts known only at run time.
func (j *judging) exactly(r *Rule, c *shell.Command, h *hit) bool {
	m := &r.Match
	if len(m.Flags)+len(m.AnyFlags)+len(m.Args)+len(m.AnyArgs) == 0 {
		return true
	}
	if c.Dynamic {
		return false
	}
	for _, o := range c.Operands {
		if !o.Static {
			return false
		}
	}
	if len(m.Flags) > 0 {
		for _, f := range c.Flags {
			if !slices.Contains(h.nf.flags, f.Name) && !slices.Contains(h.nf.allowed, f.Name) {
				return false
			}
		}
	}
	if len(m.Args) > 0 {
		for _, o := range c.Operands {
			if !slices.ContainsFunc(m.Args, func(g string) bool { return argGlob(g, o.Value) }) {
				return false
			}
		}
	}
	return true
}

// argsMatch: one of globs matches an operand (or may, when an operand is
// known only at run time).
func (j *judging) argsMatch(h *hit, c *shell.Command, globs []string) bool {
	dynamic := ""
	for _, o := range c.Operands {
		if !o.Static {
			if dynamic == "" {
				dynamic = o.Text
			}
			continue
		}
		for _, g := range globs {
			if argGlob(g, o.Value) {
				h.parts = append(h.parts, "argument "+o.Text)
				h.hl = append(h.hl, Highlight{Text: j.at(o.Span, o.Text), Span: o.Span, Rule: h.r.Name, Why: "matches " + g + " in rule " + quote(h.r.Name)})
				return true
			}
		}
	}
	if dynamic != "" {
		h.maybe = append(h.maybe, "the argument "+dynamic+" is known only at run time")
		return true
	}
	return false
}

func argGlob(g, v string) bool {
	if globMatch(g, v) {
		return true
	}
	if strings.Contains(v, "/") {
		c := path.Clean(v)
		return c != v && globMatch(g, c)
	}
	return false
}

func anyGlob(gs []string, s string) bool {
	for _, g := range gs {
		if segMatch(g, s) {
			return true
		}
	}
	return false
}

func anyPathGlob(gs []string, s string) bool {
	for _, g := range gs {
		if globMatch(g, s) {
			return true
		}
	}
	return false
}

// globDir is the directory before a glob's first pattern character.
func globDir(p string) string {
	i := strings.IndexAny(p, "*?[")
	if i < 0 {
		return p
	}
	d := p[:i]
	if k := strings.LastIndexByte(d, '/'); k >= 0 {
		if k == 0 {
			return "/"
		}
		return d[:k]
	}
	return "."
}

func findFlag(c *shell.Command, name string) (shell.Flag, bool) {
	for _, f := range c.Flags {
		if f.Name == name {
			return f, true
		}
	}
	return shell.Flag{}, false
}

// describeFlags names matched flags by the word they were written in:
// "-rf (-r -f)", "--recursive (-r)", "--force".
func describeFlags(fls []shell.Flag) []string {
	var out []string
	var texts []string
	names := map[string][]string{}
	for _, f := range fls {
		if _, ok := names[f.Text]; !ok {
			texts = append(texts, f.Text)
		}
		names[f.Text] = append(names[f.Text], f.Name)
	}
	for _, t := range texts {
		ns := names[t]
		if len(ns) == 1 && ns[0] == t {
			out = append(out, t)
			continue
		}
		out = append(out, t+" ("+strings.Join(ns, " ")+")")
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// outsideAllowed lists what the command uses outside the rule's
// allowed_flags.
func (j *judging) outsideAllowed(c *shell.Command, h *hit) []string {
	r := h.r
	if len(r.AllowedFlags) == 0 {
		return nil
	}
	var bad []string
	for _, f := range c.Flags {
		if slices.Contains(h.nf.allowed, f.Name) || slices.Contains(bad, f.Name) {
			continue
		}
		bad = append(bad, f.Name)
		j.highlights = append(j.highlights, j.flagHighlight(f, r.Name, "not in allowed_flags of rule "+quote(r.Name)))
	}
	if len(h.nf.allowedSubs) > 0 && c.Subcommand != "" && !slices.Contains(h.nf.allowedSubs, c.Subcommand) {
		bad = append(bad, "subcommand "+c.Subcommand)
	}
	if c.Dynamic {
		bad = append(bad, "an argument known only at run time (it may be a flag)")
	}
	return bad
}

// flagsFor is the rule's flags normalized for a program.
func (r *Rule) flagsFor(program, sub string) normFlags {
	if len(r.Match.Subcommand) == 0 {
		sub = ""
	}
	if nf, ok := r.norm[program+"\x00"+sub]; ok {
		return nf
	}
	return normalize(r, program, sub)
}

func normalize(r *Rule, program, sub string) normFlags {
	var nf normFlags
	if len(r.Match.Flags) > 0 {
		nf.flags = slices.Compact(shell.NormalizeFlags(program, sub, r.Match.Flags...))
	}
	if len(r.Match.AnyFlags) > 0 {
		nf.any = shell.NormalizeFlags(program, sub, r.Match.AnyFlags...)
	}
	for _, a := range r.AllowedFlags {
		if strings.HasPrefix(a, "-") {
			nf.allowed = append(nf.allowed, shell.NormalizeFlags(program, sub, a)...)
		} else {
			nf.allowedSubs = append(nf.allowedSubs, a)
		}
	}
	return nf
}

// prepare fills the rules' normalized flag caches for their literal
// program names and the effect classes they stand for; the policy is
// read-only afterwards.
func (p *Policy) prepare() {
	for i := range p.Rules {
		r := &p.Rules[i]
		r.implied = impliedEffects(p, r)
		r.norm = map[string]normFlags{}
		subs := r.Match.Subcommand
		if len(subs) == 0 {
			subs = []string{""}
		}
		for _, prog := range r.Match.Command {
			if strings.ContainsAny(prog, `*?[\`) {
				continue
			}
			for _, s := range subs {
				if strings.ContainsAny(s, `*?[\`) {
					continue
				}
				r.norm[prog+"\x00"+s] = normalize(r, prog, s)
			}
		}
	}
}

// scope checks the command's writes against the file scope.
func (j *judging) scope(c *shell.Command) (outcome, bool) {
	p := j.p
	if len(p.Scopes.Files) == 0 {
		return outcome{}, false
	}
	var bad []string
	for _, w := range c.Writes {
		if special(w.Path) && w.Known {
			continue
		}
		ok, why := j.inScope(w)
		if ok {
			continue
		}
		bad = append(bad, why)
		j.highlight(w.Span, nil, RuleScope, why)
	}
	if len(bad) == 0 {
		return outcome{}, false
	}
	return outcome{action: p.Levels[p.Scopes.Outside], level: p.Scopes.Outside, rule: RuleScope,
		why: fmt.Sprintf("%s: %s", display(c), strings.Join(bad, "; "))}, true
}

func (j *judging) inScope(w shell.Write) (bool, string) {
	if !w.Known {
		return false, fmt.Sprintf("%s %s is known only at run time, so it may be outside the file scope %v", w.How, w.Text, j.p.Scopes.Files)
	}
	p := w.Path
	if w.Glob {
		p = path.Join(globDir(p), "_")
	}
	var cands []string
	switch {
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "~"):
		cands = append(cands, p)
	case p == ".." || strings.HasPrefix(p, "../"):
		if j.dir == "" {
			return false, fmt.Sprintf("%s writes %s, outside the working directory and the file scope %v", w.How, w.Path, j.p.Scopes.Files)
		}
		cands = append(cands, path.Join(j.dir, p))
	default:
		if p == "." {
			cands = append(cands, ".")
		} else {
			cands = append(cands, "./"+p)
		}
		if j.dir != "" {
			cands = append(cands, path.Join(j.dir, p))
		}
	}
	for _, g := range j.p.Scopes.Files {
		for _, c := range cands {
			if globMatch(g, c) || (j.dir != "" && strings.HasPrefix(g, "./") && globMatch(path.Join(j.dir, g[2:]), c)) {
				return true, ""
			}
		}
	}
	return false, fmt.Sprintf("%s writes %s, outside the file scope %v", w.How, w.Path, j.p.Scopes.Files)
}

// special paths are not files: writing them changes nothing on disk.
func special(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// riskyByNature are flags worth showing whatever the policy says.
var riskyByNature = map[string]map[string]string{
	"": {
		"--force": "forces the operation", "--purge": "also deletes configuration", "--no-preserve-root": "lets / itself be deleted",
		"--hard": "discards uncommitted work", "--delete": "deletes", "--force-with-lease": "rewrites remote history",
		"--mirror": "makes the remote an exact copy, deleting what is not local", "-delete": "deletes what it finds",
		"--recursive": "recurses into directories",
	},
	"rm":     {"-r": "deletes directories recursively", "-f": "never asks and ignores errors"},
	"chmod":  {"-R": "recurses into directories"},
	"chown":  {"-R": "recurses into directories"},
	"chgrp":  {"-R": "recurses into directories"},
	"cp":     {"-f": "overwrites without asking"},
	"mv":     {"-f": "overwrites without asking"},
	"ln":     {"-f": "replaces existing files"},
	"git":    {"-f": "forces the operation", "-D": "deletes a branch even if unmerged", "-x": "also deletes ignored files"},
	"pacman": {"-R": "removes packages"},
	"dpkg":   {"-P": "purges a package", "-r": "removes a package"},
}

func (j *judging) riskyFlags(c *shell.Command) {
	for _, f := range c.Flags {
		why, ok := riskyByNature[c.Program][f.Name]
		if !ok {
			why, ok = riskyByNature[""][f.Name]
		}
		if ok {
			j.highlights = append(j.highlights, j.flagHighlight(f, "", f.Name+" "+why))
		}
	}
}

func (j *judging) flagHighlight(f shell.Flag, rule, why string) Highlight {
	return Highlight{Text: j.at(f.Span, f.Text), Flags: []string{f.Name}, Span: f.Span, Rule: rule, Why: why}
}

func (j *judging) highlight(sp shell.Span, flags []string, rule, why string) {
	j.highlights = append(j.highlights, Highlight{Text: j.at(sp, ""), Flags: flags, Span: sp, Rule: rule, Why: why})
}

// at is the judged command's text at a span, or fallback.
func (j *judging) at(sp shell.Span, fallback string) string {
	if sp.Start >= 0 && sp.Start <= sp.End && sp.End <= len(j.src) && sp.End > sp.Start {
		return j.src[sp.Start:sp.End]
	}
	return fallback
}

// mergeHighlights joins highlights of the same span and rule (-r and -f
// of one -rf) and folds a rule-less one into a ruled one of the same
// span.
func mergeHighlights(hs []Highlight) []Highlight {
	type key struct {
		sp   shell.Span
		rule string
	}
	ruled := map[shell.Span]int{}
	at := map[key]int{}
	out := make([]Highlight, 0, len(hs))
	add := func(i int, h Highlight) {
		for _, f := range h.Flags {
			if !slices.Contains(out[i].Flags, f) {
				out[i].Flags = append(out[i].Flags, f)
			}
		}
		if h.Rule == out[i].Rule && !strings.Contains(out[i].Why, h.Why) {
			out[i].Why += "; " + h.Why
		}
	}
	for _, h := range hs {
		if h.Rule == "" {
			continue
		}
		k := key{h.Span, h.Rule}
		if i, ok := at[k]; ok {
			add(i, h)
			continue
		}
		at[k] = len(out)
		if _, ok := ruled[h.Span]; !ok {
			ruled[h.Span] = len(out)
		}
		out = append(out, h)
	}
	for _, h := range hs {
		if h.Rule != "" {
			continue
		}
		if i, ok := ruled[h.Span]; ok {
			add(i, h)
			continue
		}
		k := key{h.Span, ""}
		if i, ok := at[k]; ok {
			add(i, h)
			continue
		}
		at[k] = len(out)
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b Highlight) int { return a.Span.Start - b.Span.Start })
	return out
}

// impliedEffects are the effect classes a rule stands for beyond its
// spelling: a confirm or deny rule naming rm with -r (and no flags but
// -f, -v, -d, no subcommand, any_flags, writes or effect) is about
// destroying a tree, so it matches every recursive delete and wipe — find
// -delete, rsync --delete, git clean -d -f, truncation, dd of=, mv to
// /dev/null, chmod -R 000 — with its args applied to what they destroy.
func impliedEffects(p *Policy, r *Rule) []string {
	m := &r.Match
	if r.action(p) == Allow || !slices.Contains(m.Command, "rm") || len(m.Subcommand)+len(m.AnyFlags)+len(m.Writes)+len(m.Effect) > 0 {
		return nil
	}
	flags := shell.NormalizeFlags("rm", "", m.Flags...)
	if !slices.Contains(flags, "-r") {
		return nil
	}
	for _, f := range flags {
		if f != "-r" && f != "-f" && f != "-v" && f != "-d" {
			return nil
		}
	}
	return shell.EffectClasses
}
