package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/roles/policy/shell"
)

// canonical is the policy's content in one fixed form: defaults filled,
// patterns read into matches, flags normalized and sorted, durations as
// Go duration strings. It excludes Version.
type canonical struct {
	Name              string              `json:"name"`
	Default           Action              `json:"default"`
	Unresolved        Action              `json:"unresolved"`
	Levels            map[string]Action   `json:"levels"`
	Approvals         map[string]Approval `json:"approvals"`
	IrreversibleExtra int                 `json:"irreversible_extra"`
	Scopes            Scopes              `json:"scopes"`
	Budgets           canonicalBudgets    `json:"budgets"`
	Gates             *canonicalGates     `json:"gates,omitempty"`
	ApprovePlans      string              `json:"approve_plans,omitempty"`
	Rules             []Rule              `json:"rules"`
	// Tools is absent without tools: rules, so that policies without
	// them keep the hash they had before.
	Tools []ToolRule `json:"tools,omitempty"`
}

type canonicalBudgets struct {
	RunTime   string `json:"run_time"`
	Steps     int    `json:"steps"`
	Replans   int    `json:"replans"`
	LLMTokens int    `json:"llm_tokens"`
	// The artifact caps are absent when unset, so that policies without
	// them keep the hash they had before.
	ArtifactBytes    int64 `json:"artifact_bytes,omitempty"`
	RunArtifactBytes int64 `json:"run_artifact_bytes,omitempty"`
}

// canonicalGates is present only when a gate timeout is set, so that
// policies without one keep the hash they had before gates could time out.
type canonicalGates struct {
	Timeout   string `json:"timeout"`
	OnTimeout string `json:"on_timeout"`
}

// Canonical is the policy's canonical JSON, the bytes Hash is taken of.
func (p *Policy) Canonical() []byte {
	c := canonical{
		Name: p.Name, Default: p.Default, Unresolved: p.Unresolved,
		Levels: map[string]Action{}, Approvals: map[string]Approval{},
		IrreversibleExtra: p.IrreversibleExtra, Scopes: p.Scopes, ApprovePlans: p.ApprovePlans,
		Budgets: canonicalBudgets{RunTime: p.Budgets.RunTime.String(), Steps: p.Budgets.Steps,
			Replans: p.Budgets.Replans, LLMTokens: p.Budgets.LLMTokens,
			ArtifactBytes: p.Budgets.ArtifactBytes, RunArtifactBytes: p.Budgets.RunArtifactBytes},
	}
	if p.Gates.Timeout > 0 {
		c.Gates = &canonicalGates{Timeout: p.Gates.Timeout.String(), OnTimeout: p.Gates.OnTimeout}
	}
	for l := Low; l <= Critical; l++ {
		c.Levels[l.String()] = p.Levels[l]
		c.Approvals[l.String()] = p.Approvals[l]
	}
	for _, r := range p.Rules {
		r.Match = canonicalMatch(r.Match)
		r.AllowedFlags = canonicalAllowed(r)
		c.Rules = append(c.Rules, r)
	}
	c.Tools = p.Tools
	b, err := json.Marshal(c)
	if err != nil {
		// Every field is a plain value: this cannot happen.
		panic("policy: canonical form: " + err.Error())
	}
	return b
}

func canonicalMatch(m Match) Match {
	prog, sub := "", ""
	if len(m.Command) > 0 {
		prog = m.Command[0]
	}
	if len(m.Subcommand) == 1 {
		sub = m.Subcommand[0]
	}
	norm := func(fs []string) []string {
		if len(fs) == 0 {
			return nil
		}
		return sortedSet(shell.NormalizeFlags(prog, sub, fs...))
	}
	return Match{
		Command: sortedSet(m.Command), Subcommand: sortedSet(m.Subcommand),
		Flags: norm(m.Flags), AnyFlags: norm(m.AnyFlags),
		Args: sortedSet(m.Args), AnyArgs: sortedSet(m.AnyArgs), Writes: sortedSet(m.Writes), Effect: sortedSet(m.Effect),
	}
}

// canonicalAllowed normalizes allowed_flags' flags (--yes is -y) and
// keeps its subcommands.
func canonicalAllowed(r Rule) []string {
	prog := ""
	if len(r.Match.Command) > 0 {
		prog = r.Match.Command[0]
	}
	var out []string
	for _, a := range r.AllowedFlags {
		if strings.HasPrefix(a, "-") {
			out = append(out, shell.NormalizeFlags(prog, "", a)...)
		} else {
			out = append(out, a)
		}
	}
	return sortedSet(out)
}

func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

func hashOf(p *Policy) string {
	sum := sha256.Sum256(p.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// globMatch matches s against a glob: path.Match per /-separated segment,
// with ** matching any number of segments.
func globMatch(g, s string) bool {
	if !strings.Contains(g, "**") && strings.Count(g, "/") == strings.Count(s, "/") {
		return segMatch(g, s)
	}
	return segsMatch(strings.Split(g, "/"), strings.Split(s, "/"))
}

func segsMatch(gs, ss []string) bool {
	for len(gs) > 0 {
		if gs[0] == "**" {
			gs = gs[1:]
			if len(gs) == 0 {
				return true
			}
			for i := 0; i <= len(ss); i++ {
				if segsMatch(gs, ss[i:]) {
					return true
				}
			}
			return false
		}
		if len(ss) == 0 || !segMatch(gs[0], ss[0]) {
			return false
		}
		gs, ss = gs[1:], ss[1:]
	}
	return len(ss) == 0
}

func segMatch(g, s string) bool {
	if !strings.ContainsAny(g, `*?[\`) {
		return g == s
	}
	ok, _ := path.Match(g, s)
	return ok
}
