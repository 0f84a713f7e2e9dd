package executor

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Safety is what the executor checks and enforces around every step
// beyond running it (docs/policy.md, "The executor"): the policy it judges
// assignments with again, and the hardening of the step's processes.
type Safety struct {
	// Policies fetches the policy versions assignments name. Nil: an
	// assignment that names a policy version is refused (it cannot be
	// judged).
	Policies PolicySource
	// EnvAllow, RunAs, Limits, RefuseRoot and Landlock are the runner's
	// (runner.Options); they replace Config.Runner's when set.
	EnvAllow   []string
	RunAs      string
	Limits     runner.Limits
	RefuseRoot bool
	Landlock   bool
}

// SafetyFrom is the Safety of an executor configured by c, fetching
// policies through the query API client q (nil: none): the environment allowlist
// (executor.env_allow, else runner.DefaultEnvAllow), the user steps run as
// (executor.run_as; an executor running as root refuses steps unless it is
// set), the resource limits (executor.max_open_files,
// executor.max_address_space) and Landlock (executor.landlock).
func SafetyFrom(c config.ExecutorConfig, q apiwire.Caller) Safety {
	s := Safety{EnvAllow: c.EnvAllow, RunAs: c.RunAs, RefuseRoot: true, Landlock: c.Landlock}
	if q != nil {
		s.Policies = APIPolicies(q)
	}
	s.Limits.OpenFiles = uint64(max(c.MaxOpenFiles, 0))
	s.Limits.AddressSpace = uint64(max(c.AddressSpaceBytes(), 0))
	return s
}

// applyTo sets the runner options the safety settings name.
func (s Safety) applyTo(o *runner.Options) {
	if s.EnvAllow != nil {
		o.EnvAllow = s.EnvAllow
	}
	if s.RunAs != "" {
		o.RunAs = s.RunAs
	}
	if !s.Limits.IsZero() {
		o.Limits = s.Limits
	}
	if s.RefuseRoot {
		o.RefuseRoot = true
	}
	if s.Landlock {
		o.Landlock = true
	}
}

// judged is what vet learned of an attempt it lets run.
type judged struct {
	// p is the policy version the assignment names; nil when it names
	// none (an older leader), or for steps not judged (noop,
	// file.restore).
	p *policy.Policy
	// approved: the verdict was confirm and the assignment's approval is
	// of exactly this step.
	approved bool
	// dir is the step's working directory as judged.
	dir string
}

// writeScope is the file scope Landlock confines the step to: the
// policy's scopes.files when the policy allowed the step without an
// approval; nil (not confined) otherwise — an operator who approved the
// exact command approved its writes too.
func (j judged) writeScope() []string {
	if j.p == nil || j.approved || len(j.p.Scopes.Files) == 0 {
		return nil
	}
	return j.p.Scopes.Files
}

// allowAbsolute is fileedit.Options.AllowAbsolute for a file edit: an
// absolute path outside the working directory may be written when the
// policy's file scope names it, or when an operator approved exactly this
// edit; nil (never) without a policy.
func (j judged) allowAbsolute() func(string) bool {
	switch {
	case j.p == nil:
		return nil
	case j.approved:
		return func(string) bool { return true }
	}
	p, dir := j.p, j.dir
	return func(target string) bool { return p.AllowsWrite(target, dir) }
}

// refusal is why the executor will not run an attempt: reported as a
// failure of class policy, the step never having started.
type refusal struct{ why string }

func (r *refusal) Error() string { return "refused by the executor: " + r.why }

// vet judges an attempt again, before it runs, with exactly the policy
// version its assignment names (defense in depth: the leader judged it
// first). It returns a *refusal when the attempt must not run: the policy
// version cannot be fetched or does not hash as named, the working
// directory lies outside the policy's file scope, the verdict is deny, or
// it is confirm and the assignment's approval is not of this exact step
// and policy version (event.GateSubject). It returns ctx's error when ctx
// ended meanwhile (the runner then reports the cancellation), and nil when
// the attempt may run — also for an assignment naming no policy (a leader
// older than protocol version 5), which is logged once. noop and
// file.restore steps (which restore the before-images the executor
// recorded itself) are not judged.
func (e *Executor) vet(ctx context.Context, a event.TaskAssignedData) (judged, error) {
	if a.Step.Kind == event.KindNoop || a.Step.Kind == event.KindFileRestore {
		return judged{}, nil
	}
	if e.cfg.judging != nil {
		e.cfg.judging(a.Step)
	}
	if a.Policy.IsZero() {
		if !e.unjudgedWarned.Swap(true) {
			e.log.Warn("assignments carry no policy version (a leader older than protocol version 5): "+
				"steps run without the executor judging them again", "step", a.Step.ID)
		}
		return judged{}, nil
	}
	ref := a.Policy
	p, err := e.policies.get(ctx, ref)
	if err != nil {
		if ctx.Err() != nil {
			return judged{}, ctx.Err()
		}
		return judged{}, &refusal{fmt.Sprintf("cannot judge the step with policy version %d (%s): %v", ref.Version, ref.Hash, err)}
	}
	spec := e.spec(a)
	dir, derr := runner.Dir(spec, e.cfg.Runner)
	if derr != nil {
		dir = "" // judged without it (stricter); the runner reports the bad cwd
	}
	v := e.judge(p, a.Step, dir)
	if v.outside {
		return judged{}, &refusal{fmt.Sprintf("working directory %s lies outside the file scope %v of policy version %d", dir, p.Scopes.Files, ref.Version)}
	}
	switch v.action {
	case policy.Allow:
		if a.Step.Kind == event.KindTool {
			// Its definition may make the call stricter (toolJudge): an
			// approval of exactly this step and definition counts then.
			return judged{p: p, dir: dir, approved: a.Approved != "" && a.Approved == event.ToolGateSubject(a.Step, ref, a.ToolHash)}, nil
		}
		return judged{p: p, dir: dir}, nil
	case policy.Deny:
		return judged{}, &refusal{fmt.Sprintf("policy version %d denies it: rule %s (level %s): %s", ref.Version, v.rule, v.level, v.why)}
	}
	want := event.ToolGateSubject(asAssigned(ctx, a.Step), ref, a.ToolHash) // git.go
	if a.Approved == want {
		return judged{p: p, approved: true, dir: dir}, nil
	}
	if a.Step.Kind == event.KindTool {
		// Judged without the definition, a tool step is confirm; the
		// call is judged again with its pinned definition (toolJudge),
		// as the leader judged it, and refused there if it needs an
		// approval the assignment does not carry.
		return judged{p: p, dir: dir}, nil
	}
	got := "the assignment carries no approval"
	if a.Approved != "" {
		got = fmt.Sprintf("the approval is of %s, this step with this policy version is %s", a.Approved, want)
	}
	return judged{}, &refusal{fmt.Sprintf("not approved for this exact command: policy version %d asks for approval (rule %s, level %s: %s), and %s",
		ref.Version, v.rule, v.level, v.why, got)}
}

// judge is the judgement of s with p in dir: whether dir lies outside
// p's file scope (checked when dir is known and the scope is not empty)
// and otherwise p's verdict on s. The judgement of a shell step is kept
// (judgeCache) and reused for the same step, policy text and version,
// and directories; one made while the scope could not be checked (an
// error, logged) is not kept.
func (e *Executor) judge(p *policy.Policy, s event.Step, dir string) judgement {
	scoped := dir != "" && len(p.Scopes.Files) > 0
	var work string
	if scoped {
		var err error
		if work, err = runner.Dir(runner.Spec{}, e.cfg.Runner); err != nil {
			e.log.Error("file scope check: the executor's work directory", "err", err)
			return judgement{outside: true}
		}
	}
	k, cache := judgeKeyOf(p, s, dir, work)
	if cache {
		if j, ok := e.judged.get(k); ok {
			return j
		}
	}
	if scoped {
		in, err := e.inFileScope(p, dir, work)
		if err != nil {
			e.log.Error("file scope check", "err", err)
			return judgement{outside: true}
		}
		if !in {
			j := judgement{outside: true}
			if cache {
				e.judged.put(k, j)
			}
			return j
		}
	}
	v := judgeStep(p, s, dir)
	j := judgement{action: v.Action, level: v.Level, rule: v.Rule, why: v.Why}
	if cache {
		e.judged.put(k, j)
	}
	return j
}

// judgeStep is the policy's verdict on what running s does in dir:
// policy.JudgeStep, the judgement the leader made before assigning it.
func judgeStep(p *policy.Policy, s event.Step, dir string) policy.Verdict {
	return p.JudgeStep(s, dir)
}

// worse reports whether a is a stricter verdict than b (action, then
// level).
func worse(a, b policy.Verdict) bool {
	return a.Action > b.Action || a.Action == b.Action && a.Level > b.Level
}

// inFileScope reports whether dir lies inside p's file scope: whether a
// file written in dir would be (with ./ in the scope meaning work, the
// executor's work directory, not dir itself). The policy's own judge
// decides, with a policy holding p's scope alone, so that globs mean here
// exactly what they mean in verdicts.
func (e *Executor) inFileScope(p *policy.Policy, dir, work string) (bool, error) {
	sp, err := e.policies.scope(p)
	if err != nil {
		return false, err
	}
	probe := path.Join(dir, ".agentic-scope")
	v := sp.JudgeIn("touch -- '"+strings.ReplaceAll(probe, "'", `'\''`)+"'", work)
	return v.Rule != policy.RuleScope && v.Action == policy.Allow, nil
}

// scopeOnly is a policy with the file scope files (a policy's
// Scopes.Files in JSON) and nothing else.
func scopeOnly(files []byte) (*policy.Policy, error) {
	text := "default: allow\nunresolved: deny\nlevels: {high: deny}\nscopes: {outside: high, files: " + string(files) + "}\n"
	return policy.Parse([]byte(text), "file scope")
}

// spec is the runner's Spec of an attempt.
func (e *Executor) spec(a event.TaskAssignedData) runner.Spec {
	return runner.Spec{Kind: a.Step.Kind, Command: a.Step.Run, Env: a.Step.Env, Cwd: a.Step.Cwd, Timeout: a.Step.Timeout.Std(),
		Creates: a.Step.Creates, Check: a.Step.Check, RunAs: a.Step.RunAs}
}

// refusedDraft is the task.finished of an attempt vet refused.
func (e *Executor) refusedDraft(run string, a event.TaskAssignedData, started time.Time, err error) event.Draft {
	e.policyRefused.Add(1)
	e.log.Warn("step refused", "run", run, "step", a.Step.ID, "attempt", a.Attempt, "policy_version", a.Policy.Version, "err", err)
	dir, _ := runner.Dir(e.spec(a), e.cfg.Runner)
	return event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{
		Step: a.Step.ID, Attempt: a.Attempt, Node: e.env.Node,
		Status: event.TaskFailed, Class: event.ClassPolicy, ExitCode: -1, Error: err.Error(),
		Started: started, Cwd: dir, CommandHash: CommandHash(a.Step.Run),
	})
}

// logSafety logs the executor's safety settings at start.
func (e *Executor) logSafety() {
	o := e.cfg.Runner
	allow := o.EnvAllow
	if allow == nil {
		allow = runner.DefaultEnvAllow
	}
	runAs := o.RunAs
	switch {
	case runAs != "":
	case os.Geteuid() == 0 && o.RefuseRoot:
		runAs = "none: agentd runs as root and executor.run_as is not set, so every shell step and file edit is refused"
		e.log.Warn("executor: agentd runs as root and no user is configured for steps: every shell step and file edit will be refused; " +
			"set executor.run_as to an unprivileged user (or to root, to run steps as root on purpose)")
	default:
		runAs = "agentd's own user"
	}
	e.log.Info("executor safety",
		"policy_judging", e.policies != nil && e.policies.src != nil,
		"env_allow", len(allow), "env_allow_list", strings.Join(allow, ","),
		"run_as", runAs, "limits", o.Limits.String(), "landlock", e.landlockStatus())
}

// landlockStatus says whether Landlock confines steps, and why not.
func (e *Executor) landlockStatus() string {
	abi := runner.LandlockABI()
	switch {
	case e.cfg.Runner.Landlock && abi > 0:
		return fmt.Sprintf("active: Landlock ABI %d confines each step the policy allows without approval to writing in the policy's file scope", abi)
	case e.cfg.Runner.Landlock:
		e.log.Warn("executor: executor.landlock is on but " + runner.LandlockUnavailable() + ": steps run without Landlock")
		return "not active: " + runner.LandlockUnavailable()
	case abi > 0:
		return fmt.Sprintf("not active: executor.landlock is off (the kernel offers Landlock ABI %d)", abi)
	}
	return "not active: executor.landlock is off, and " + runner.LandlockUnavailable()
}
