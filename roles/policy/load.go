package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/roles/policy/shell"
	"gopkg.in/yaml.v3"
)

// ErrInvalid marks a policy file that cannot be loaded; the error lists
// every problem as "file:line:col: key: message".
var ErrInvalid = errors.New("policy: invalid policy")

// Problem is one thing wrong in a policy file.
type Problem struct {
	File      string
	Line, Col int
	Key       string
	Msg       string
}

func (p Problem) Error() string {
	loc := p.File
	if loc == "" {
		loc = "policy"
	}
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
	}
	if p.Key != "" {
		return loc + ": " + p.Key + ": " + p.Msg
	}
	return loc + ": " + p.Msg
}

// LoadError lists every problem found in a policy file.
type LoadError struct{ Problems []Problem }

func (e *LoadError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return strings.Join(parts, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *LoadError) Is(target error) bool { return target == ErrInvalid }

// Parse reads a policy from YAML (JSON is YAML too). name is the file
// name used in errors. Unknown keys, bad levels and actions, bad globs
// and patterns that are not one plain command are errors naming the
// line; every problem is reported at once.
func Parse(data []byte, name string) (*Policy, error) {
	l := &loader{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &LoadError{Problems: []Problem{{File: name, Msg: "not YAML: " + err.Error()}}}
	}
	p := defaults()
	if len(doc.Content) == 0 {
		return nil, &LoadError{Problems: []Problem{{File: name, Msg: "empty policy: want at least rules or default"}}}
	}
	l.top(doc.Content[0], p)
	if len(l.problems) > 0 {
		return nil, &LoadError{Problems: l.problems}
	}
	p.prepare()
	p.hash = hashOf(p)
	return p, nil
}

// defaults is the policy an empty file would give.
func defaults() *Policy {
	p := &Policy{Default: Allow, Unresolved: Confirm, IrreversibleExtra: 1}
	p.Levels = [Critical + 1]Action{0, Allow, Allow, Confirm, Confirm}
	for l := Low; l <= Critical; l++ {
		p.Approvals[l] = Approval{Approvers: 1}
	}
	p.Scopes.Outside = High
	return p
}

type loader struct {
	file     string
	problems []Problem
}

func (l *loader) bad(n *yaml.Node, key, format string, args ...any) {
	p := Problem{File: l.file, Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	l.problems = append(l.problems, p)
}

// fields walks a mapping, refusing keys outside known.
func (l *loader) fields(n *yaml.Node, at string, known []string, each func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		l.bad(n, at, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := joinKey(at, k.Value)
		if !slices.Contains(known, k.Value) {
			l.bad(k, key, "unknown key (want one of: %s)", strings.Join(known, ", "))
			continue
		}
		if seen[k.Value] {
			l.bad(k, key, "given twice")
			continue
		}
		seen[k.Value] = true
		each(k.Value, k, v)
	}
}

func joinKey(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

func (l *loader) str(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.bad(n, key, "want a string, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// strs reads a list of strings; a single string is a list of one.
func (l *loader) strs(n *yaml.Node, key string) []string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		l.bad(n, key, "want a list of strings, got %s", kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		if s, ok := l.str(c, fmt.Sprintf("%s[%d]", key, i)); ok {
			if s == "" {
				l.bad(c, fmt.Sprintf("%s[%d]", key, i), "empty")
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

func (l *loader) integer(n *yaml.Node, key string, min, max int64) (int64, bool) {
	var v int64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		l.bad(n, key, "want a whole number, got %s", kindName(n))
		return 0, false
	}
	if v < min || v > max {
		l.bad(n, key, "%d is out of range [%d, %d]", v, min, max)
		return 0, false
	}
	return v, true
}

func (l *loader) boolean(n *yaml.Node, key string) (bool, bool) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		l.bad(n, key, "want true or false, got %s", kindName(n))
		return false, false
	}
	return v, true
}

func (l *loader) level(n *yaml.Node, key string) Level {
	s, ok := l.str(n, key)
	if !ok {
		return 0
	}
	v, err := ParseLevel(s)
	if err != nil {
		l.bad(n, key, "%q is not a level (want low, medium, high or critical)", s)
	}
	return v
}

func (l *loader) action(n *yaml.Node, key string) Action {
	s, ok := l.str(n, key)
	if !ok {
		return 0
	}
	v, err := ParseAction(s)
	if err != nil {
		l.bad(n, key, "%q is not an action (want allow, confirm or deny)", s)
	}
	return v
}

func (l *loader) globs(n *yaml.Node, key string, paths bool) []string {
	gs := l.strs(n, key)
	for i, g := range gs {
		if err := checkGlob(g, paths); err != nil {
			l.bad(n, fmt.Sprintf("%s[%d]", key, i), "%q: %v", g, err)
		}
	}
	return gs
}

var topKeys = []string{"name", "version", "default", "unresolved", "levels", "approvals", "scopes", "budgets", "gates", "approve_plans", "rules", "tools"}

func (l *loader) top(n *yaml.Node, p *Policy) {
	l.fields(n, "", topKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			p.Name, _ = l.str(v, key)
		case "version":
			p.Version, _ = l.integer(v, key, 0, 1<<62)
		case "default":
			p.Default = l.action(v, key)
		case "unresolved":
			a := l.action(v, key)
			if a == Allow {
				l.bad(v, key, "allow is not permitted: what cannot be judged is never allowed (want confirm or deny)")
			}
			if a != 0 {
				p.Unresolved = a
			}
		case "levels":
			l.fields(v, key, levelNames[1:], func(lk string, _, lv *yaml.Node) {
				lvl, _ := ParseLevel(lk)
				if a := l.action(lv, key+"."+lk); a != 0 {
					p.Levels[lvl] = a
				}
			})
		case "approvals":
			l.approvals(v, p)
		case "scopes":
			l.scopes(v, p)
		case "budgets":
			l.budgets(v, p)
		case "gates":
			l.gates(v, p)
		case "approve_plans":
			switch {
			case v.Kind == yaml.ScalarNode && v.Tag == "!!bool":
				if b, ok := l.boolean(v, key); ok && b {
					p.ApprovePlans = PlansAll
				}
			case v.Kind == yaml.ScalarNode && v.Value == PlansByLevel:
				p.ApprovePlans = PlansByLevel
			default:
				l.bad(v, key, "want true, false or by-level, got %q", v.Value)
			}
		case "rules":
			l.rules(v, p)
		case "tools":
			l.toolRules(v, p)
		}
	})
}

func (l *loader) approvals(n *yaml.Node, p *Policy) {
	known := append(slices.Clone(levelNames[1:]), "irreversible_extra")
	l.fields(n, "approvals", known, func(key string, _, v *yaml.Node) {
		at := "approvals." + key
		if key == "irreversible_extra" {
			x, _ := l.integer(v, at, 0, 10)
			p.IrreversibleExtra = int(x)
			return
		}
		lvl, _ := ParseLevel(key)
		a := Approval{Approvers: 1}
		l.fields(v, at, []string{"approvers", "not_submitter"}, func(ak string, _, av *yaml.Node) {
			switch ak {
			case "approvers":
				x, _ := l.integer(av, at+".approvers", 1, 10)
				a.Approvers = int(x)
			case "not_submitter":
				a.NotSubmitter, _ = l.boolean(av, at+".not_submitter")
			}
		})
		p.Approvals[lvl] = a
	})
}

func (l *loader) scopes(n *yaml.Node, p *Policy) {
	l.fields(n, "scopes", []string{"files", "network", "outside"}, func(key string, _, v *yaml.Node) {
		at := "scopes." + key
		switch key {
		case "files":
			p.Scopes.Files = l.globs(v, at, true)
		case "network":
			p.Scopes.Network = l.strs(v, at)
		case "outside":
			if lv := l.level(v, at); lv != 0 {
				p.Scopes.Outside = lv
			}
		}
	})
}

func (l *loader) budgets(n *yaml.Node, p *Policy) {
	l.fields(n, "budgets", []string{"run_time", "steps", "replans", "llm_tokens", "artifact_bytes", "run_artifact_bytes"}, func(key string, _, v *yaml.Node) {
		at := "budgets." + key
		switch key {
		case "run_time":
			s, ok := l.str(v, at)
			if !ok {
				return
			}
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				l.bad(v, at, "%q is not a duration (want e.g. 30m, 2h)", s)
				return
			}
			p.Budgets.RunTime = d
		case "steps":
			x, _ := l.integer(v, at, 0, 1<<31)
			p.Budgets.Steps = int(x)
		case "replans":
			x, _ := l.integer(v, at, 0, 1<<31)
			p.Budgets.Replans = int(x)
		case "llm_tokens":
			x, _ := l.integer(v, at, 0, 1<<50)
			p.Budgets.LLMTokens = int(x)
		case "artifact_bytes":
			p.Budgets.ArtifactBytes, _ = l.size(v, at)
		case "run_artifact_bytes":
			p.Budgets.RunArtifactBytes, _ = l.size(v, at)
		}
	})
}

func (l *loader) gates(n *yaml.Node, p *Policy) {
	l.fields(n, "gates", []string{"timeout", "on_timeout"}, func(key string, _, v *yaml.Node) {
		at := "gates." + key
		s, ok := l.str(v, at)
		if !ok {
			return
		}
		switch key {
		case "timeout":
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				l.bad(v, at, "%q is not a duration (want e.g. 30m, 24h)", s)
				return
			}
			p.Gates.Timeout = d
		case "on_timeout":
			if s != "skip" && s != "deny" {
				l.bad(v, at, "%q: want skip or deny", s)
				return
			}
			p.Gates.OnTimeout = s
		}
	})
	if p.Gates.Timeout > 0 && p.Gates.OnTimeout == "" {
		p.Gates.OnTimeout = "deny"
	}
}

var ruleKeys = []string{"name", "pattern", "match", "level", "action", "require_confirmation", "allowed_flags", "reversible", "reason"}
var matchKeys = []string{"command", "subcommand", "flags", "any_flags", "args", "any_args", "writes", "effect"}

func (l *loader) rules(n *yaml.Node, p *Policy) {
	if n.Kind != yaml.SequenceNode {
		l.bad(n, "rules", "want a list of rules, got %s", kindName(n))
		return
	}
	names := map[string]int{}
	for i, rn := range n.Content {
		at := fmt.Sprintf("rules[%d]", i)
		r, ok := l.rule(rn, at)
		if !ok {
			continue
		}
		if r.Name == "" {
			r.Name = at
		}
		if prev, dup := names[r.Name]; dup {
			l.bad(rn, at+".name", "%q is also the name of the rule on line %d", r.Name, prev)
			continue
		}
		names[r.Name] = rn.Line
		p.Rules = append(p.Rules, r)
	}
}

func (l *loader) rule(n *yaml.Node, at string) (Rule, bool) {
	var r Rule
	before := len(l.problems)
	var confirm, confirmSet bool
	var patternNode, matchNode, actionNode *yaml.Node
	l.fields(n, at, ruleKeys, func(key string, _, v *yaml.Node) {
		k := at + "." + key
		switch key {
		case "name":
			r.Name, _ = l.str(v, k)
		case "pattern":
			r.Pattern, _ = l.str(v, k)
			patternNode = v
		case "match":
			matchNode = v
			l.fields(v, k, matchKeys, func(mk string, _, mv *yaml.Node) {
				mat := k + "." + mk
				switch mk {
				case "command":
					r.Match.Command = l.globs(mv, mat, false)
				case "subcommand":
					r.Match.Subcommand = l.globs(mv, mat, false)
				case "flags":
					r.Match.Flags = l.flagList(mv, mat)
				case "any_flags":
					r.Match.AnyFlags = l.flagList(mv, mat)
				case "args":
					r.Match.Args = l.globs(mv, mat, true)
				case "any_args":
					r.Match.AnyArgs = l.globs(mv, mat, true)
				case "writes":
					r.Match.Writes = l.globs(mv, mat, true)
				case "effect":
					r.Match.Effect = l.strs(mv, mat)
					for i, e := range r.Match.Effect {
						if !slices.Contains(shell.EffectClasses, e) {
							l.bad(mv, fmt.Sprintf("%s[%d]", mat, i), "unknown effect %q (want one of: %s)", e, strings.Join(shell.EffectClasses, ", "))
						}
					}
				}
			})
		case "level":
			r.Level = l.level(v, k)
		case "action":
			r.Action = l.action(v, k)
			actionNode = v
		case "require_confirmation":
			confirm, confirmSet = l.boolean(v, k)
		case "allowed_flags":
			r.AllowedFlags = l.strs(v, k)
		case "reversible":
			rev, ok := l.boolean(v, k)
			r.Irreversible = ok && !rev
		case "reason":
			r.Reason, _ = l.str(v, k)
		}
	})
	switch {
	case patternNode != nil && matchNode != nil:
		l.bad(n, at, "give pattern or match, not both")
	case patternNode == nil && matchNode == nil:
		l.bad(n, at, "a rule needs a pattern or a match")
	case patternNode != nil && r.Pattern != "":
		m, err := compilePattern(r.Pattern)
		if err != nil {
			l.bad(patternNode, at+".pattern", "%v", err)
		}
		r.Match = m
		if r.Name == "" {
			r.Name = r.Pattern
		}
	case matchNode != nil && len(r.Match.Command) == 0 && len(r.Match.Writes) == 0 && len(r.Match.Effect) == 0:
		l.bad(matchNode, at+".match", "name a command, writes or an effect")
	case matchNode != nil && len(r.Match.Command) == 0 && (len(r.Match.Subcommand)+len(r.Match.Flags)+len(r.Match.AnyFlags)+len(r.Match.Args)+len(r.Match.AnyArgs)) > 0:
		l.bad(matchNode, at+".match", "subcommand, flags and args need a command")
	}
	if confirmSet && confirm {
		switch r.Action {
		case Allow:
			l.bad(actionNode, at+".action", "allow contradicts require_confirmation: true")
		case 0:
			r.Action = Confirm
		}
	}
	if r.Level == 0 {
		switch r.Action {
		case Allow:
			r.Level = Low
		case Confirm, Deny:
			r.Level = High
		default:
			l.bad(n, at, "a rule needs a level (low, medium, high, critical) or an action")
		}
	}
	return r, len(l.problems) == before
}

// flagList reads flags: each entry must start with a dash.
func (l *loader) flagList(n *yaml.Node, key string) []string {
	fs := l.strs(n, key)
	for i, f := range fs {
		if !strings.HasPrefix(f, "-") || f == "-" || f == "--" {
			l.bad(n, fmt.Sprintf("%s[%d]", key, i), "%q is not a flag (want -x or --long)", f)
		}
	}
	return fs
}

// compilePattern reads a compact pattern ("rm -rf", "git push --force")
// as a parsed command: its program, subcommand, flags and operands.
func compilePattern(pat string) (Match, error) {
	cmds := shell.Parse(pat)
	if len(cmds) != 1 || cmds[0].Program == "" || (cmds[0].Opaque != "" && !cmds[0].Inline) || cmds[0].Runs || len(cmds[0].Via) > 0 || len(cmds[0].Writes) > 0 && !writesOwnArgs(cmds[0]) {
		return Match{}, fmt.Errorf("%q is not one plain command (want a program, its flags and arguments, e.g. \"rm -rf\")", pat)
	}
	c := cmds[0]
	m := Match{Command: []string{c.Program}}
	if err := checkGlob(c.Program, false); err != nil {
		return Match{}, fmt.Errorf("%q: %v", pat, err)
	}
	if c.Subcommand != "" {
		m.Subcommand = []string{c.Subcommand}
	}
	for _, f := range c.Flags {
		if !slices.Contains(m.Flags, f.Name) {
			m.Flags = append(m.Flags, f.Name)
		}
	}
	for _, o := range c.Operands {
		if !o.Static {
			return Match{}, fmt.Errorf("%q: %s is not a plain word", pat, o.Text)
		}
		m.Args = append(m.Args, o.Value)
	}
	return m, nil
}

// writesOwnArgs: a pattern like "rm -rf /" names its operands, which the
// parser reads as writes; that is fine, a redirection is not.
func writesOwnArgs(c shell.Command) bool {
	for _, w := range c.Writes {
		if strings.HasSuffix(w.How, "redirect") {
			return false
		}
	}
	return true
}

// checkGlob checks a glob's syntax; paths may use ** for any number of
// directories.
func checkGlob(g string, paths bool) error {
	if !paths && strings.Contains(g, "/") {
		return errors.New("a program name has no /")
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("bad glob: %w", err)
		}
	}
	return nil
}
