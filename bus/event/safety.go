package event

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// PolicyRef names one version of the policy in force: its place in the
// ledger's history (Version, 1 for the first policy applied) and its
// content (Hash, roles/policy's hash of the canonical policy).
type PolicyRef struct {
	Version int64  `json:"version"`
	Hash    string `json:"hash"`
}

// IsZero reports whether r names no policy.
func (r PolicyRef) IsZero() bool { return r.Version == 0 && r.Hash == "" }

// Policy sources (PolicyAppliedData.Source).
const (
	// PolicyFromApply: an administrator's `agentctl policy apply`.
	PolicyFromApply = "apply"
	// PolicyFromBootstrap: a leader recorded the policy of its --policy
	// file, or the shipped default, while the ledger held none.
	PolicyFromBootstrap = "bootstrap"
	// PolicyFromRemember: a leader added the narrow allow rule of an
	// approval given with remember.
	PolicyFromRemember = "remember"
)

// PolicyAppliedData makes Text the policy in force: the payload of
// policy.applied (an administrator's) and policy.recorded (a leader's).
// Its version is Base+1: the fold ignores one whose Base is not the version
// in force (two applies raced; the later one must be made again on the
// newer base), and a policy.recorded when the ledger already holds a
// policy, unless its Source is remember.
type PolicyAppliedData struct {
	// Base is the version this one replaces; 0 for the first.
	Base int64 `json:"base"`
	// Name labels the policy ("default").
	Name string `json:"name"`
	// Hash is the policy's hash (roles/policy), checked against Text by
	// whoever loads it.
	Hash string `json:"hash"`
	// Text is the policy file as applied (YAML).
	Text string `json:"text"`
	// Source is how it came to be applied: apply, bootstrap or remember.
	Source string `json:"source"`
	// Reason is the applier's note.
	Reason string `json:"reason,omitempty"`
	// Step, with the event's run, is the step whose approval added the
	// rule (Source remember).
	Step string `json:"step,omitempty"`
	// Proposal is the approved proposal a leader applied (Source
	// proposal, docs/improve.md). Protocol version 8.
	Proposal string `json:"proposal,omitempty"`
}

// GateKind says why a gate holds a step.
type GateKind string

// Gate kinds. Append-only.
const (
	// GatePolicy: the policy's verdict on the step is confirm.
	GatePolicy GateKind = "policy"
	// GateNeedsDecision: an attempt that is not idempotent may have partly
	// run on a node that was lost (accept runs it again, skip skips it).
	GateNeedsDecision GateKind = "needs-decision"
	// GatePlan: the policy asks operators to approve a plan revision as a
	// whole before any of its steps runs (approve_plans).
	GatePlan GateKind = "plan"
)

// GateAction is an operator's answer to a gate, or what a gate that timed
// out does.
type GateAction string

// Gate actions. Append-only.
const (
	// GateAccept approves what the gate shows, exactly.
	GateAccept GateAction = "accept"
	// GateEdit replaces the step's command; the new one is judged again,
	// and both are recorded.
	GateEdit GateAction = "edit"
	// GateSkip ends the step as skipped: its dependents run.
	GateSkip GateAction = "skip"
	// GateDeny fails the step with class policy.
	GateDeny GateAction = "deny"
)

// Verdict is the policy's judgement of a step as a gate records it:
// roles/policy's verdict without its per-command findings.
type Verdict struct {
	// Action is allow, confirm or deny.
	Action string `json:"action"`
	// Level is low, medium, high or critical.
	Level string `json:"level"`
	// Rule names the rule that decided (or default, unresolved, scope).
	Rule string `json:"rule"`
	// Why explains the decision.
	Why string `json:"why"`
	// Reversible is false when a rule says the action cannot be undone.
	Reversible bool `json:"reversible"`
	// Unresolved: part of the command cannot be judged statically.
	Unresolved bool `json:"unresolved,omitempty"`
	// Highlights are the risky parts of the command.
	Highlights []Highlight `json:"highlights,omitempty"`
}

// Highlight is a risky part of a judged command.
type Highlight struct {
	// Text is the part as written.
	Text string `json:"text"`
	// Flags are the canonical flags Text stands for.
	Flags []string `json:"flags,omitempty"`
	// Start and End locate Text in the command (bytes; Start -1 when it
	// has no place of its own there).
	Start int `json:"start"`
	End   int `json:"end"`
	// Rule raised it; empty for a flag risky by nature.
	Rule string `json:"rule,omitempty"`
	// Why says what is risky about it.
	Why string `json:"why"`
}

// GateOpenedData holds a step (or a plan revision, Step "") of the
// event's run until operators answer.
type GateOpenedData struct {
	Decision
	// Step is the gated step; "" for a plan gate.
	Step string `json:"step,omitempty"`
	// Attempt is the attempt the gate precedes.
	Attempt int `json:"attempt,omitempty"`
	// Revision is the plan revision (plan gates, and the step's).
	Revision int      `json:"revision,omitempty"`
	Kind     GateKind `json:"kind"`
	// Subject is the hash of exactly what is judged (GateSubject): an
	// answer counts only while it names the gate's current subject.
	Subject string `json:"subject"`
	// Policy is the policy version judged with.
	Policy PolicyRef `json:"policy,omitzero"`
	// Verdict is the policy's (absent for needs-decision gates).
	Verdict *Verdict `json:"verdict,omitempty"`
	// Approvals is how many distinct operators must accept.
	Approvals int `json:"approvals"`
	// NotSubmitter: the run's submitter may not accept.
	NotSubmitter bool `json:"not_submitter,omitempty"`
	// Expires is when the leader closes the gate unanswered (zero:
	// never), doing OnExpiry (skip or deny).
	Expires  time.Time  `json:"expires,omitzero"`
	OnExpiry GateAction `json:"on_expiry,omitempty"`
	// Memory are the step's ${memory:SCOPE/KEY} references as the leader
	// resolved them: the gate judges, and shows, the step with these
	// values (ApplyMemory), and Command is its resolved command. Protocol
	// version 8.
	Memory  []MemoryValue `json:"memory,omitempty"`
	Command string        `json:"command,omitempty"`
	// ToolHash, for a step of kind tool, is the hash of the pinned
	// definition the step was judged with: Subject binds it
	// (ToolGateSubject), so an answer counts for that definition only.
	// Protocol version 8.
	ToolHash string `json:"tool_hash,omitempty"`
}

// GateDecidedData is one operator's answer to a gate of the event's run.
type GateDecidedData struct {
	// Step is the gated step; "" for a plan gate.
	Step string `json:"step,omitempty"`
	// Subject is the gate subject the operator was shown: the answer is
	// void unless it is still the gate's.
	Subject string     `json:"subject"`
	Action  GateAction `json:"action"`
	// Command is the new command of an edit.
	Command string `json:"command,omitempty"`
	// Reason is the operator's note (required for skip and deny by the
	// CLI).
	Reason string `json:"reason,omitempty"`
	// Remember, with accept: the leader adds the narrowest allow rule
	// that would have allowed this exact command to the policy, as a
	// policy.applied of source remember.
	Remember bool `json:"remember,omitempty"`
}

// GateDecidedForData is an operator's answer to a gate that a ui node
// signs on their behalf, having authenticated them (an API token of their
// operator credential): the answer is Operator's.
type GateDecidedForData struct {
	GateDecidedData
	// Operator is the operator id the ui node authenticated: the approver.
	Operator string `json:"operator"`
}

// GateClosedData closes a gate without an operator's answer.
type GateClosedData struct {
	Decision
	Step    string `json:"step,omitempty"`
	Subject string `json:"subject"`
	// Action is what closing does: skip or deny.
	Action GateAction `json:"action"`
	// Code is the stable reason ("gate_expired"); Reason is for people.
	Code   string `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// RunBrakeData is the payload of run.pause and run.resume.
type RunBrakeData struct {
	Reason string `json:"reason,omitempty"`
}

// RunBrakeForData is the payload of run.paused_for and run.resumed_for:
// an operator's run.pause or run.resume that a ui node signs on their
// behalf, having authenticated them. The brake is Operator's.
type RunBrakeForData struct {
	RunBrakeData
	// Operator is the operator id the ui node authenticated: the actor.
	Operator string `json:"operator"`
}

// RunCancelForData is the payload of run.cancel_requested_for: an
// operator's run.cancel that a ui node signs on their behalf, having
// authenticated them. The request is Operator's.
type RunCancelForData struct {
	RunCancelData
	// Operator is the operator id the ui node authenticated: the actor.
	Operator string `json:"operator"`
}

// gateSubject is what GateSubject hashes: every field of a step that
// changes what running it does, and the policy that judged it.
type gateSubject struct {
	Kind       StepKind  `json:"kind"`
	Run        string    `json:"run,omitempty"`
	Check      string    `json:"check,omitempty"`
	Creates    string    `json:"creates,omitempty"`
	Cwd        string    `json:"cwd,omitempty"`
	Env        []string  `json:"env,omitempty"`
	RunAs      string    `json:"run_as,omitempty"`
	Path       string    `json:"path,omitempty"`
	Content    string    `json:"content,omitempty"`
	Mode       string    `json:"mode,omitempty"`
	Patch      string    `json:"patch,omitempty"`
	Compensate string    `json:"compensate,omitempty"`
	Policy     PolicyRef `json:"policy"`
	// Tool and Args of a tool step (protocol version 8).
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Sources of a research step (protocol version 8): what the policy
	// judges of it. Absent for other steps, whose subjects stay as they
	// were.
	Sources []string `json:"sources,omitempty"`
}

// GateSubject is the hash an approval is bound to ("sha256:<hex>"):
// exactly what is judged — the step's kind, command, guard, working
// directory, environment (names and values), user, file path, content,
// mode and patch, compensation, a tool step's tool and arguments, a
// research step's sources — and
// the policy version and hash. Any
// change to one of them gives another subject, which voids approvals of
// the old one. Orchestrator and executor compute it alike.
func GateSubject(s Step, p PolicyRef) string {
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	b, err := json.Marshal(gateSubject{
		Kind: s.Kind, Run: s.Run, Check: s.Check, Creates: s.Creates, Cwd: s.Cwd,
		Env: env, RunAs: s.RunAs, Path: s.Path, Content: s.Content, Mode: s.Mode,
		Patch: s.Patch, Compensate: s.Compensate, Policy: p, Tool: s.Tool, Args: validArgs(s.Args),
		Sources: s.Sources,
	})
	if err != nil {
		panic("event: marshal gate subject: " + err.Error()) // plain strings cannot fail
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RootAddedData: from this event's stream position on, the cluster trusts
// the credentials a second root issues, beside those of the roots it
// already trusts (the overlap of a root rotation, docs/security.md).
type RootAddedData struct {
	// Key is the root's Ed25519 public key, base64url without padding,
	// or 64 lowercase hex digits: what agentctl writes, since a base64url
	// key has the shape of a secret and signers and receivers refuse it
	// (code secret).
	Key string `json:"key"`
	// KeyID is its fingerprint (trust.Fingerprint): the iss of the
	// credentials it issues.
	KeyID string `json:"key_id"`
	// Reason is the administrator's note.
	Reason string `json:"reason,omitempty"`
	// Proof is the root's Ed25519 signature, hex, over
	// "agentic trust.root_added v1\n" + KeyID + "\n" + the KeyID of the
	// cluster's genesis root: that the new root's holder agreed to be a
	// root of this cluster (trust.RootProof). Ledgers refuse a
	// trust.root_added without a valid one.
	Proof string `json:"proof,omitempty"`
}

// RootRetiredData: from this event's stream position on, credentials the
// root KeyID issued are refused (the cutover of a rotation, or a lost
// root); what they signed earlier stays in the ledger.
type RootRetiredData struct {
	KeyID  string `json:"key_id"`
	Reason string `json:"reason,omitempty"`
}

// validArgs is args, or args as a JSON string when it is not JSON (built
// by hand, not decoded): the subject still covers its bytes.
func validArgs(args json.RawMessage) json.RawMessage {
	if len(args) == 0 || json.Valid(args) {
		return args
	}
	b, _ := json.Marshal(string(args))
	return b
}

// ToolGateSubject is the subject of a gate on a tool step judged with the
// pinned definition whose hash is toolHash: GateSubject of the step,
// bound to that hash (BindToolHash), so that an answer given while one
// definition was shown never counts for another. For other kinds, and
// with toolHash "", it is GateSubject.
func ToolGateSubject(s Step, p PolicyRef, toolHash string) string {
	subject := GateSubject(s, p)
	if s.Kind != KindTool {
		return subject
	}
	return BindToolHash(subject, toolHash)
}

// BindToolHash binds a tool step's gate subject to the hash of the
// definition it was judged with; toolHash "" leaves it as it is.
func BindToolHash(subject, toolHash string) string {
	if toolHash == "" {
		return subject
	}
	sum := sha256.Sum256([]byte(subject + "\x00tool-definition\x00" + toolHash))
	return "sha256:" + hex.EncodeToString(sum[:])
}
