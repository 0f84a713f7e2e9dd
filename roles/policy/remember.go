package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/roles/policy/shell"
	"gopkg.in/yaml.v3"
	"mvdan.cc/sh/v3/syntax"
)

// ErrNotRememberable: no narrow allow rule can name the command (it is
// not one plain command, an argument is a glob or known only at run time,
// or the rule would not allow it: it is unresolved or writes outside the
// file scope).
var ErrNotRememberable = errors.New("policy: command cannot be remembered")

// Remember returns the policy text with one rule added at the end of its
// rules: the narrowest one that allows exactly command, run in dir — a
// compact pattern naming its program, subcommand, flags and arguments,
// action allow, with name and reason. An allow rule that names flags and
// arguments allows exactly those (docs/policy.md), so the rule allows this
// command and nothing more. The text keeps its comments; the result is
// checked: the new policy parses and allows command. It fails with
// ErrNotRememberable when no such rule exists, and with the parse error
// when text is not a policy.
func Remember(text []byte, command, dir, name, reason string) ([]byte, error) {
	pattern, err := rememberPattern(command)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("policy: remember: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("policy: remember: the policy is not a mapping")
	}
	top := doc.Content[0]
	at := -1
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "rules" {
			at = i + 1
		}
	}
	if at < 0 {
		top.Content = append(top.Content, str("rules"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"})
		at = len(top.Content) - 1
	}
	if n := top.Content[at]; n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		top.Content[at] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	}
	rules := top.Content[at]
	if rules.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("policy: remember: rules is not a list")
	}
	rules.Style = 0 // block style, one rule per entry
	rule := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("name"), str(name), str("pattern"), str(pattern), str("action"), str("allow"), str("reason"), str(reason)}}
	rules.Content = append(rules.Content, rule)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("policy: remember: %w", err)
	}
	p, err := Parse(out, "remembered")
	if err != nil {
		return nil, fmt.Errorf("policy: remember: %w", err)
	}
	if v := p.JudgeIn(command, dir); v.Action != Allow {
		return nil, fmt.Errorf("%w: with the rule the verdict is still %s (%s)", ErrNotRememberable, v.Action, v.Why)
	}
	return out, nil
}

// rememberPattern is the compact pattern that names exactly command: its
// words as the shell reads them, joined by spaces and quoted where needed.
func rememberPattern(command string) (string, error) {
	cmds := shell.Parse(command)
	if len(cmds) != 1 {
		return "", fmt.Errorf("%w: %q is not one command", ErrNotRememberable, command)
	}
	c := cmds[0]
	if c.Program == "" || c.Opaque != "" || c.Runs || len(c.Via) > 0 || len(c.Env) > 0 || !writesOwnArgs(c) {
		return "", fmt.Errorf("%w: %q is not one plain command", ErrNotRememberable, command)
	}
	if n, err := wordCount(command); err != nil || n != namedWords(c) {
		return "", fmt.Errorf("%w: %q has words a rule cannot name (a flag's value)", ErrNotRememberable, command)
	}
	words := []string{c.Program}
	if c.Subcommand != "" {
		words = append(words, c.Subcommand)
	}
	for _, f := range c.Flags {
		words = append(words, f.Name)
	}
	for _, o := range c.Operands {
		if !o.Static || strings.ContainsAny(o.Value, "*?[]\\") || strings.HasPrefix(o.Value, "-") {
			return "", fmt.Errorf("%w: argument %q of %q is not a plain word", ErrNotRememberable, o.Text, command)
		}
		words = append(words, quoteWord(o.Value))
	}
	return strings.Join(words, " "), nil
}

// wordCount is the number of words of command, one simple command.
func wordCount(command string) (int, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return 0, err
	}
	if len(f.Stmts) != 1 {
		return 0, errors.New("not one statement")
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(f.Stmts[0].Redirs) > 0 || len(call.Assigns) > 0 {
		return 0, errors.New("not a plain call")
	}
	return len(call.Args), nil
}

// namedWords is the number of words a pattern names of c: its program,
// subcommand, flag words, operands and an end of options.
func namedWords(c shell.Command) int {
	n := 1 + len(c.Operands)
	if c.Subcommand != "" {
		n++
	}
	seen := map[int]bool{}
	for _, f := range c.Flags {
		if !seen[f.Span.Start] {
			seen[f.Span.Start] = true
			n++
		}
	}
	if strings.Contains(" "+c.Text+" ", " -- ") {
		n++
	}
	return n
}

// quoteWord quotes a word for the shell when it is not plain.
func quoteWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"$`\\|&;<>(){}!#~=%") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
