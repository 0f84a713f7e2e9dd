package policy

import (
	"time"
)

// Policy is a parsed, validated safety policy. It is immutable once
// loaded and safe for concurrent use; Judge does no I/O.
type Policy struct {
	// Name labels the policy ("default").
	Name string
	// Version is the revision the ledger gave this policy; 0 until it is
	// applied. It is not part of the hash: the hash names the content,
	// the version names its place in the ledger's history.
	Version int64
	// Default is the action for a command no rule names.
	Default Action
	// Unresolved is the action for what cannot be judged statically:
	// confirm or deny, never allow. Its level is always high.
	Unresolved Action
	// Levels maps each level to the action of a rule that gives none.
	Levels [Critical + 1]Action
	// Approvals is what an approval of each level needs.
	Approvals [Critical + 1]Approval
	// IrreversibleExtra is how many more approvers a command needs when
	// a rule that judged it says reversible: false.
	IrreversibleExtra int
	// Scopes bounds what commands may touch.
	Scopes Scopes
	// Budgets bounds a run.
	Budgets Budgets
	// Gates says how long a gate waits for its approvals.
	Gates Gates
	// ApprovePlans says which plan revisions operators approve as a
	// whole before any of their steps runs: PlansNone, PlansAll, or
	// PlansByLevel (those with a step the policy does not allow).
	ApprovePlans string
	// Rules are the rules, in the file's order.
	Rules []Rule
	// Tools are the rules of plugin tools (tools:), in the file's order
	// (JudgeTool).
	Tools []ToolRule

	hash string
}

// Approval is what approving a gate of one level needs.
type Approval struct {
	// Approvers is the number of distinct operators who must approve.
	Approvers int `json:"approvers"`
	// NotSubmitter: the operator who submitted the run cannot approve.
	NotSubmitter bool `json:"not_submitter,omitempty"`
}

// Scopes bounds what commands may touch.
type Scopes struct {
	// Files are globs of the paths commands may write ("./**" is the
	// step's working directory). Empty: writes are not checked.
	Files []string `json:"files,omitempty"`
	// Network lists host:port patterns steps may reach (NetworkAllowed):
	// research fetches and plugins' network grants are judged against
	// it; empty allows no host. The shell command judge does not check it.
	Network []string `json:"network,omitempty"`
	// Outside is the level of a write outside Files (or one whose target
	// is known only at run time).
	Outside Level `json:"outside,omitempty"`
}

// Values of Policy.ApprovePlans (the file's approve_plans: false, true,
// by-level).
const (
	PlansNone    = ""
	PlansAll     = "all"
	PlansByLevel = "by-level"
)

// Gates says what becomes of a gate nobody answers: after Timeout (zero:
// never) the orchestrator closes it with OnTimeout, skip or deny.
type Gates struct {
	Timeout time.Duration
	// OnTimeout is "skip" (the step is skipped, its dependents run) or
	// "deny" (the step fails with class policy); deny when unset.
	OnTimeout string
}

// Budgets bound a run; zero means no bound, except for Replans, where it
// means the orchestrator's default (orchestrator.DefaultReplans).
type Budgets struct {
	RunTime   time.Duration `json:"run_time,omitempty"`
	Steps     int           `json:"steps,omitempty"`
	Replans   int           `json:"replans,omitempty"`
	LLMTokens int           `json:"llm_tokens,omitempty"`
	// ArtifactBytes caps one artifact a step stores, RunArtifactBytes
	// all of a run's; 0 means the default (DefaultArtifactBytes,
	// DefaultRunArtifactBytes): see ArtifactCaps.
	ArtifactBytes    int64 `json:"artifact_bytes,omitempty"`
	RunArtifactBytes int64 `json:"run_artifact_bytes,omitempty"`
}

// Default artifact caps (budgets.artifact_bytes, run_artifact_bytes).
const (
	DefaultArtifactBytes    int64 = 1 << 30
	DefaultRunArtifactBytes int64 = 4 << 30
)

// ArtifactCaps returns the caps of one artifact and of a run's artifacts,
// the defaults where the policy sets none.
func (b Budgets) ArtifactCaps() (perArtifact, perRun int64) {
	perArtifact, perRun = b.ArtifactBytes, b.RunArtifactBytes
	if perArtifact <= 0 {
		perArtifact = DefaultArtifactBytes
	}
	if perRun <= 0 {
		perRun = DefaultRunArtifactBytes
	}
	return perArtifact, perRun
}

// Rule is one rule of a policy.
type Rule struct {
	// Name identifies the rule in verdicts; by default its pattern, or
	// "rules[i]".
	Name string `json:"name"`
	// Match is what the rule matches; a compact pattern is read into it.
	Match Match `json:"match"`
	// Level is the risk of what the rule matches.
	Level Level `json:"level"`
	// Action, when set, decides; otherwise the policy's Levels do.
	Action Action `json:"action,omitempty"`
	// AllowedFlags, when set, lists the flags (and, for words without a
	// dash, subcommands) the matched command may use; anything else
	// raises the level by one.
	AllowedFlags []string `json:"allowed_flags,omitempty"`
	// Irreversible labels what the rule matches as not undoable
	// (reversible: false): an approval needs IrreversibleExtra more
	// approvers.
	Irreversible bool `json:"irreversible,omitempty"`
	// Reason is shown in verdicts.
	Reason string `json:"reason,omitempty"`

	// Pattern is the compact pattern the rule was written with, if any.
	Pattern string `json:"-"`
	// norm caches the normalized flags for the rule's single program.
	norm map[string]normFlags
	// implied lists the effect classes the rule stands for beyond its
	// literal spelling: a confirm or deny rule for rm -r matches every
	// recursive delete and wipe (find -delete, rsync --delete, dd of=…).
	implied []string
}

type normFlags struct {
	flags, any, allowed []string
	allowedSubs         []string
}

// Match is what a rule matches in one simple command. Every field given
// must match; lists of names and globs match when any entry does.
type Match struct {
	// Command lists program names or globs (mkfs*), matched against the
	// base name of the program — and of programs that run others, so
	// "sudo" matches sudo rm.
	Command []string `json:"command,omitempty"`
	// Subcommand lists subcommands (git push, apt-get remove).
	Subcommand []string `json:"subcommand,omitempty"`
	// Flags must all be present, in any order and spelling.
	Flags []string `json:"flags,omitempty"`
	// AnyFlags: at least one must be present.
	AnyFlags []string `json:"any_flags,omitempty"`
	// Args are globs that must each match an operand.
	Args []string `json:"args,omitempty"`
	// AnyArgs are globs of which one must match an operand.
	AnyArgs []string `json:"any_args,omitempty"`
	// Writes are path globs; the command must write a path matching one.
	Writes []string `json:"writes,omitempty"`
	// Effect lists effect classes (recursive-delete, wipe); the command
	// must have one of them, whatever its spelling (shell.EffectClasses).
	Effect []string `json:"effect,omitempty"`
}

// specificity ranks rules: the rule with more conditions decides when
// several match (an allow rule for rm -rf ./build over a confirm rule for
// rm -rf).
func (m *Match) specificity() int {
	n := len(m.Flags) + len(m.Args)
	for _, l := range [][]string{m.Command, m.Subcommand, m.AnyFlags, m.AnyArgs, m.Writes, m.Effect} {
		if len(l) > 0 {
			n++
		}
	}
	return n
}

// action is the rule's own action, or the policy's for the rule's level.
func (r *Rule) action(p *Policy) Action {
	if r.Action != 0 {
		return r.Action
	}
	return p.Levels[r.Level]
}

// Hash is the policy's canonical hash, "sha256:<hex>": the same content
// gives the same hash whatever its formatting, comments or key order.
func (p *Policy) Hash() string { return p.hash }

// Ref names a policy in a verdict.
type Ref struct {
	Name    string `json:"name,omitempty"`
	Version int64  `json:"version"`
	Hash    string `json:"hash"`
}

// Ref is the policy's name, version and hash.
func (p *Policy) Ref() Ref { return Ref{Name: p.Name, Version: p.Version, Hash: p.hash} }

// WithVersion is a copy of the policy carrying the revision the ledger
// gave it.
func (p *Policy) WithVersion(v int64) *Policy {
	c := *p
	c.Version = v
	return &c
}
