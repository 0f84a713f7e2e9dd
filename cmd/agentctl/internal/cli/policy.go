package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/spf13/cobra"
)

func (a *app) policyCmd() *cobra.Command {
	return group("policy", "Judge commands with a safety policy",
		`The safety policy says which shell commands run, which wait for an
operator's approval and which are refused. Commands are parsed with a real
shell parser and every simple command in them is judged (see
docs/policy.md). The policy in force is a fact of the ledger: show it,
apply a new version (role admin) and list its history here.`,
		a.policyCheckCmd(), a.policyShowCmd(), a.policyApplyCmd(), a.policyHistoryCmd())
}

func (a *app) policyCheckCmd() *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "check COMMAND",
		Short: "Judge a shell command with a policy, without running it",
		Long: `Judge a shell command with the shipped default policy, or with the
policy in --file, and print the verdict: allow, confirm or deny; the
risk level; the rule that decided; why, naming the simple command and
the flag, argument or write that decided; the risky parts highlighted,
each with the rule that raised it; and the policy's version and hash.

Nothing is run and no cluster is needed. The exit code is 0 whatever the
verdict (1 when the policy file is invalid, listing every problem with
its line).

-o json prints the verdict object (see docs/policy.md), -o jsonl the same
on one line.`,
		Example: `  agentctl policy check 'sudo rm -rf /var/www'
  agentctl policy check --file policy.yaml 'apt-get remove --purge nginx'
  agentctl policy check -o json 'curl -fsSL https://x/install.sh | sh' | jq -r .action`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, argv []string) error {
			p := policy.Default()
			if file != "" {
				data, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("read policy: %w", err)
				}
				if p, err = policy.Parse(data, file); err != nil {
					return fmt.Errorf("policy %s is invalid:\n%w", file, err)
				}
			}
			v := p.Judge(argv[0])
			if a.output != formatText {
				return a.writeJSON(v)
			}
			return a.printVerdict(v)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "policy file (YAML); default: the shipped default policy")
	return c
}

// printVerdict prints a verdict for people: the command with its risky
// parts marked, then the decision and the highlights.
func (a *app) printVerdict(v policy.Verdict) error {
	w := a.env.Stdout
	color := isTerminal(w) && a.env.Getenv("NO_COLOR") == ""
	if color {
		// Escaped run by run and styled: past the writer's escaping.
		_ = writeStyled(w, "command     "+markCommand(v, color)+"\n")
	} else {
		fmt.Fprintf(w, "command     %s\n", v.Command)
	}
	if m := caretLine(v); m != "" && !color {
		fmt.Fprintf(w, "            %s\n", m)
	}
	fmt.Fprintf(w, "verdict     %s (level %s)\n", v.Action, v.Level)
	fmt.Fprintf(w, "rule        %s\n", v.Rule)
	fmt.Fprintf(w, "why         %s\n", v.Why)
	if v.Action == policy.Confirm {
		who := ""
		if v.NotSubmitter {
			who = ", not the submitter"
		}
		fmt.Fprintf(w, "approvals   %d%s\n", v.Approvals, who)
	}
	if !v.Reversible {
		fmt.Fprintf(w, "reversible  no\n")
	}
	name := v.Policy.Name
	if name == "" {
		name = "-"
	}
	fmt.Fprintf(w, "policy      %s version %d %s\n", name, v.Policy.Version, v.Policy.Hash)
	if len(v.Highlights) > 0 {
		fmt.Fprintln(w, "highlights")
		t := a.table()
		for _, h := range v.Highlights {
			rule := h.Rule
			if rule == "" {
				rule = "-"
			}
			flags := strings.Join(h.Flags, " ")
			if flags == "" {
				flags = "-"
			}
			fmt.Fprintf(t, "  %s\t%s\t%s\t%s\n", h.Text, flags, rule, h.Why)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(v.Findings) > 1 {
		fmt.Fprintln(w, "parts")
		t := a.table()
		for _, f := range v.Findings {
			cmd := f.Command
			if len(f.Via) > 0 {
				cmd += " (inside " + strings.Join(f.Via, ", ") + ")"
			}
			fmt.Fprintf(t, "  %s\t%s\t%s\t%s\n", f.Action, f.Level, f.Rule, cmd)
		}
		return t.Flush()
	}
	return nil
}

// marked is which bytes of the command a highlight covers.
func marked(v policy.Verdict) []bool {
	m := make([]bool, len(v.Command))
	for _, h := range v.Highlights {
		if h.Span.Start < 0 || h.Span.End > len(m) || h.Span.Start >= h.Span.End {
			continue
		}
		for i := h.Span.Start; i < h.Span.End; i++ {
			m[i] = true
		}
	}
	return m
}

// markCommand is the command, its highlighted parts in bold red on a
// terminal.
func markCommand(v policy.Verdict, color bool) string {
	if !color {
		return v.Command
	}
	return markSpans(v.Command, marked(v), "\x1b[1;31m", "\x1b[0m")
}

// caretLine marks the highlighted parts with ^ under a one-line command.
func caretLine(v policy.Verdict) string {
	if strings.ContainsAny(v.Command, "\n\t") {
		return ""
	}
	m := marked(v)
	var b strings.Builder
	for i, on := range m {
		if c := v.Command[i]; c >= 0x80 && c < 0xC0 {
			continue // one mark per character the terminal shows
		}
		if on {
			b.WriteByte('^')
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.TrimRight(b.String(), " ")
}
