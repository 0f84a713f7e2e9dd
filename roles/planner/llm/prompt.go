package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Inputs is what a prompt tells the model beside the goal.
type Inputs struct {
	// Policy is the policy in force: the prompt says what it denies and
	// what waits for an operator, so that plans avoid both.
	Policy *policy.Policy
	// Capabilities the live executors offer (docker, gpu…).
	Capabilities []string
	// Facts are relevant memory facts, one line each ("deploy.target =
	// staging").
	Facts []string
	// Notes are adaptive notes from command statistics ("apt-get install
	// without -y failed 4 of 5 times").
	Notes []string
	// Tools are the approved plugin tools (protocol version 8).
	Tools []ToolInfo
	// Knowledge are research notes relevant to the goal, one line each
	// ("[note ID] claim (confidence 0.9; sources: URL, URL)"): never a
	// quarantined one (the memory role's search leaves them out). They
	// came from third-party pages, so the prompt fences them as data.
	Knowledge []string
	// Commands are command shapes' successes and failures (memory's
	// command statistics, those that failed most first): the history
	// score of plan candidates (candidates.go).
	Commands []memory.CommandStat
	// Template is the template of the goal's plan family (a plan file
	// an approved proposal made the family's, docs/improve.md), given as
	// the model's starting example; "" when the family has none.
	Template string
}

// maxPromptList caps each list the prompt carries.
const maxPromptList = 40

// system is the fixed part of the prompt.
const system = `You plan work for agentic, which runs shell commands on the user's machines.
Answer with ONE JSON object and nothing else: a plan in this format.

{"goal": "...", "steps": [
  {"id": "fetch", "title": "...", "run": "git pull"},
  {"id": "build", "run": "make", "depends_on": ["fetch"], "timeout": "10m", "retries": 1}
]}

or, for larger goals, subgoals holding steps:

{"goal": "...", "subgoals": [
  {"id": "setup", "title": "...", "steps": [{"id": "deps", "run": "apt-get install -y nginx"}]},
  {"id": "serve", "depends_on": ["setup"], "steps": [{"id": "start", "run": "systemctl start nginx"}]}
]}

Rules:
- ids: letters, digits, '-' and '_' (dots join parts); unique across the plan.
- depends_on names steps or subgoals; no cycles.
- "run" is one /bin/sh -c script; make commands non-interactive (-y, --yes, no prompts).
- "check": a command that exits 0 when the step's work is already done (the step is then skipped).
- "kind": "file.write" with "path" and "content" writes a file; "file.patch" with a unified diff in "patch" edits files.
- on_failure: replan (default: you are shown the failure and asked for a revised plan), abort, retry or continue.
- "kind": "critique" with "target" (a step id) and "criteria" has a reviewer judge that step's output against the criteria; the critique fails when they are not met.
- "kind": "research" with "questions" [{"q": "...", "criteria": "...", "critical": true}] and "sources" (http(s) URLs; only hosts the policy's network scope allows) fetches pages; a later "kind": "synthesise" step with "target" (the research step) has a model write notes citing them.
- "next": [{"on": "success" or "failure", "to": "step-id"}] runs the named step only on that outcome; steps not reached are skipped. Use it to diagnose: try, then branch.
- "hypotheses": [{"id": "h1", "statement": "..."}] at the top lists what a diagnosis tests; "tests": ["h1"] on a step says its success supports h1 and its failure refutes it.
- Prefer few, idempotent steps. Never use sudo unless the goal asks for it.
- ` + dataRule

// messages builds the request's messages for goal.
func messages(goal string, in Inputs) []Message {
	var sys strings.Builder
	sys.WriteString(system)
	if s := policySummary(in.Policy); s != "" {
		sys.WriteString("\n\nThe safety policy in force:\n")
		sys.WriteString(s)
	}
	sys.WriteString(toolsSection(in.Tools))
	var user strings.Builder
	fmt.Fprintf(&user, "Goal: %s\n", goal)
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&user, "\n%s:\n", title)
		for i, it := range items {
			if i == maxPromptList {
				fmt.Fprintf(&user, "- (%d more)\n", len(items)-i)
				break
			}
			fmt.Fprintf(&user, "- %s\n", it)
		}
	}
	list("Executors offer these capabilities", in.Capabilities)
	list("Known facts", in.Facts)
	list("Notes from earlier runs", in.Notes)
	knowledge(&user, in.Knowledge)
	if in.Template != "" {
		user.WriteString("\nThe template of this goal's plan family (a plan operators approved for its goals): start from it, and change only what the goal needs:\n")
		user.WriteString(fenced(in.Template))
		user.WriteByte('\n')
	}
	return []Message{{Role: "system", Content: sys.String()}, {Role: "user", Content: user.String()}}
}

// knowledge adds the research notes, fenced as data, to a prompt.
func knowledge(b *strings.Builder, notes []string) {
	if len(notes) == 0 {
		return
	}
	if len(notes) > maxPromptList {
		notes = notes[:maxPromptList]
	}
	b.WriteString("\nResearch notes (claims drawn from fetched sources; cite a note by its id in a step's title when you rely on it):\n")
	b.WriteString(fenced(strings.Join(notes, "\n")))
	b.WriteByte('\n')
}

// policySummary lists what the policy denies and gates, one line a rule,
// and its default; "" without a policy.
func policySummary(p *policy.Policy) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, r := range p.Rules {
		a := r.Action
		if a == 0 {
			a = p.Levels[r.Level]
		}
		if a == policy.Allow {
			continue
		}
		if n == maxPromptList {
			b.WriteString("- (more rules)\n")
			break
		}
		n++
		what := "needs an operator's approval"
		if a == policy.Deny {
			what = "is denied"
		}
		fmt.Fprintf(&b, "- %s %s (%s)", ruleText(r), what, r.Level)
		if r.Reason != "" {
			fmt.Fprintf(&b, ": %s", r.Reason)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- any other command: %s\n", p.Default)
	return b.String()
}

// ruleText shows what a rule matches.
func ruleText(r policy.Rule) string {
	if r.Pattern != "" {
		return fmt.Sprintf("%q", r.Pattern)
	}
	parts := append(append([]string(nil), r.Match.Command...), r.Match.Subcommand...)
	parts = append(parts, r.Match.Flags...)
	if len(parts) == 0 {
		return r.Name
	}
	return fmt.Sprintf("%q", strings.Join(parts, " "))
}

// promptHash is the hex SHA-256 of messages as JSON.
func promptHash(ms []Message) string {
	b, _ := json.Marshal(ms) // plain strings
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
